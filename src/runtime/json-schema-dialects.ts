import Ajv, { type Options } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';

/**
 * The JSON Schema drafts the platform takes (docs/runtime.md, "Structured answers"): a schema says
 * which with `$schema`, as Zod 4's `toJSONSchema` (2020-12) and older generators (draft-07) write it;
 * where it says none, each place keeps its own default (response formats draft-07, tool input schemas
 * 2020-12). A `$schema` naming anything else is refused, never guessed at.
 */

export type Dialect = 'draft-07' | '2019-09' | '2020-12';

const DIALECTS: Record<string, Dialect> = {
  'json-schema.org/draft-07/schema': 'draft-07',
  'json-schema.org/draft/2019-09/schema': '2019-09',
  'json-schema.org/draft/2020-12/schema': '2020-12',
};

export const DIALECT_NAMES = 'draft-07, 2019-09 or 2020-12';

/** The schema's draft by its `$schema` (http or https, with or without the empty fragment); undefined for one not taken. */
export function schemaDialect(schema: Record<string, unknown>, absent: Dialect): Dialect | undefined {
  const named = schema.$schema;
  if (named === undefined) return absent;
  if (typeof named !== 'string') return undefined;
  return DIALECTS[named.replace(/^https?:\/\//, '').replace(/#$/, '')];
}

/** An Ajv instance compiling schemas of that draft. */
export function ajvFor(dialect: Dialect, options: Options): Ajv.default {
  if (dialect === '2020-12') return new Ajv2020(options);
  if (dialect === '2019-09') return new Ajv2019(options);
  return new Ajv.default(options);
}
