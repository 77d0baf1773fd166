import type { JSONSchema7, LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';
import type Ajv from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import secureMetaSchema from 'ajv/lib/refs/json-schema-secure.json' with { type: 'json' };
import { outOfBounds } from '../json-bounds.js';
import { ajvFor, DIALECT_NAMES, type Dialect, schemaDialect } from './json-schema-dialects.js';
import { linearRegExpEngine } from './linear-regexp.js';

/**
 * Answers with a shape (docs/runtime.md, "Structured answers"): a caller's JSON Schema for the final
 * answer. Providers that support structured output are asked for it natively (the V3 call option
 * `responseFormat`); others (builtin/echo) are told in the system prompt. Either way the answer is
 * parsed and validated here, and a wrong one gets one repair attempt before the run fails.
 */

/** The request's `responseFormat`, as the API takes it. */
export interface ResponseFormat {
  type: 'json_schema';
  schema: Record<string, unknown>;
  name?: string;
}

/** A schema's JSON text, at most: a schema is a shape, not a document (and it is compiled into code). */
export const RESPONSE_SCHEMA_MAX_BYTES = 32 * 1024;

/** Why a caller's schema cannot be used; `field` is its path below `responseFormat`. */
export class ResponseFormatError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

// The caller's schemas are untrusted: strict off so common annotations pass, formats checked by the
// secure meta-schema's rule (a `format` needs a `maxLength`) but not validated (no format library),
// patterns run on the linear-time engine (a backtracking one lets `^(a+)+$` stall the process).
// One instance per draft the schema may name ($schema; draft-07 when it names none).
const options = { strict: false, validateFormats: false, allErrors: false, code: { regExp: linearRegExpEngine } };
const ajvs: Record<Dialect, Ajv.default> = {
  'draft-07': ajvFor('draft-07', options),
  '2019-09': ajvFor('2019-09', options),
  '2020-12': ajvFor('2020-12', options),
};
const isSecure = ajvs['draft-07'].compile(secureMetaSchema);
/**
 * Keywords holding subschemas, of every draft taken. The secure meta-schema (draft-07) walks those of
 * draft-07 only, so every subschema is checked on its own: one under `$defs` or `prefixItems` too.
 */
const SCHEMA_KEYWORDS = ['items', 'additionalItems', 'contains', 'additionalProperties', 'propertyNames', 'not', 'if', 'then', 'else'];
const SCHEMA_LIST_KEYWORDS = ['allOf', 'anyOf', 'oneOf', 'items', 'prefixItems'];
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', 'definitions', '$defs', 'dependencies', 'dependentSchemas'];
const SCHEMA_KEYWORDS_2019 = ['unevaluatedItems', 'unevaluatedProperties', 'contentSchema'];
/** Compiled schemas by their JSON text: the same schema sent again is not compiled again. */
const compiled = new Map<string, ValidateFunction>();
const COMPILED_KEPT = 200;

/**
 * Checks and compiles a caller's schema: its size, an object at the root, valid JSON Schema of the
 * draft its `$schema` names (draft-07, 2019-09 or 2020-12; draft-07 when none), and safe to run on untrusted answers (Ajv's json-schema-secure rules: a
 * `pattern` or `format` needs a `maxLength`...). Throws a ResponseFormatError naming the field.
 */
export function compileResponseFormat(format: ResponseFormat): ValidateFunction {
  const text = JSON.stringify(format.schema);
  if (Buffer.byteLength(text) > RESPONSE_SCHEMA_MAX_BYTES) {
    throw new ResponseFormatError('schema', `the schema's JSON is larger than ${RESPONSE_SCHEMA_MAX_BYTES} bytes`);
  }
  const cached = compiled.get(text);
  if (cached) return cached;
  if (format.schema.type !== 'object')
    throw new ResponseFormatError('schema.type', 'the answer must be an object: type "object" at the root');
  const dialect = schemaDialect(format.schema, 'draft-07');
  if (!dialect) throw new ResponseFormatError('schema.$schema', `must name JSON Schema ${DIALECT_NAMES} (or be left out: draft-07)`);
  const unsafe = insecurity(format.schema, 'schema');
  if (unsafe) throw new ResponseFormatError(unsafe.field, `the schema is unsafe to validate untrusted answers with: ${unsafe.why}`);
  const ajv = ajvs[dialect];
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(format.schema);
  } catch (err) {
    throw new ResponseFormatError('schema', `the schema does not compile: ${err instanceof Error ? err.message : String(err)}`);
  }
  // Ajv keeps every schema it compiled by its $id: one the caller named is dropped so the next may reuse the id.
  if (typeof format.schema.$id === 'string') ajv.removeSchema(format.schema.$id);
  if (compiled.size >= COMPILED_KEPT) compiled.delete(compiled.keys().next().value!);
  compiled.set(text, validate);
  return validate;
}

/** The first subschema (depth first) the secure meta-schema refuses, with its path below `responseFormat`. */
function insecurity(schema: unknown, field: string): { field: string; why: string } | undefined {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return undefined;
  if (!isSecure(schema)) return { field, why: describe(isSecure.errors) };
  const node = schema as Record<string, unknown>;
  const children: [string, unknown][] = [];
  for (const k of [...SCHEMA_KEYWORDS, ...SCHEMA_KEYWORDS_2019]) if (k in node) children.push([`${field}.${k}`, node[k]]);
  for (const k of SCHEMA_LIST_KEYWORDS)
    if (Array.isArray(node[k])) for (const [i, child] of (node[k] as unknown[]).entries()) children.push([`${field}.${k}[${i}]`, child]);
  for (const k of SCHEMA_MAP_KEYWORDS) {
    const map = node[k];
    if (map && typeof map === 'object' && !Array.isArray(map))
      for (const [name, child] of Object.entries(map)) children.push([`${field}.${k}.${name}`, child]);
  }
  for (const [path, child] of children) {
    const found = insecurity(child, path);
    if (found) return found;
  }
  return undefined;
}

function describe(errors: ErrorObject[] | null | undefined): string {
  const e = errors?.[0];
  if (!e) return 'invalid';
  return `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`;
}

/** Providers asked natively; the others are instructed in the system prompt. */
function asksNatively(model: LanguageModelV3): boolean {
  return model.provider !== 'builtin';
}

/** What the loop asks of the final answer (loop.ts `answer`). */
export interface AnswerShape {
  /** The V3 call option sent on each step when the provider is asked natively. */
  callOption?: LanguageModelV3CallOptions['responseFormat'];
  /** Added to the system prompt when it is not. */
  instruction?: string;
  /** The answer's text parsed and validated: the object, or what is wrong with it. */
  check(text: string): { value: Record<string, unknown> } | { error: string };
  /** What the model is told before its one repair attempt. */
  repairPrompt(error: string): string;
}

export function answerShape(format: ResponseFormat, model: LanguageModelV3): AnswerShape {
  const validate = compileResponseFormat(format);
  const native = asksNatively(model);
  const schemaText = JSON.stringify(format.schema);
  return {
    callOption: native ? { type: 'json', schema: format.schema as JSONSchema7, name: format.name } : undefined,
    instruction: native
      ? undefined
      : `Answer with one JSON object and nothing else (no prose, no code fence), valid against this JSON Schema${format.name ? ` (${format.name})` : ''}:\n${schemaText}`,
    check(text) {
      let value: unknown;
      try {
        value = JSON.parse(withoutFence(text));
      } catch {
        return { error: 'the answer is not JSON' };
      }
      if (!value || typeof value !== 'object' || Array.isArray(value)) return { error: 'the answer is not a JSON object' };
      // Checked before the schema's validation walks it, and before the run's end serialises it.
      const unbounded = outOfBounds(value);
      if (unbounded) return { error: `the answer ${unbounded}` };
      if (!validate(value)) return { error: `the answer does not match the schema: ${describe(validate.errors)}` };
      return { value: value as Record<string, unknown> };
    },
    repairPrompt: (error) =>
      `Your answer cannot be used: ${error}. Answer again with only the JSON object, valid against the schema${native ? '' : ' given in the instructions'}.`,
  };
}

/** Instructed models often wrap JSON in a markdown code fence: one around the whole answer is taken off. */
function withoutFence(text: string): string {
  const m = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/.exec(text);
  return m ? m[1] : text;
}
