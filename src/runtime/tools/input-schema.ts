import type Ajv from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { deeperThan, MAX_JSON_DEPTH } from '../../json-bounds.js';
import { ajvFor, DIALECT_NAMES, type Dialect, schemaDialect } from '../json-schema-dialects.js';
import { linearRegExpEngine } from '../linear-regexp.js';

/**
 * Checks a tool call's input against the tool's JSON Schema (the one the model was shown), for every
 * kind of tool: built-in, skill, delegation and MCP tools alike. Each schema is compiled once: per
 * schema object, and per schema text for the MCP servers' schemas, which arrive as new objects on
 * every run. Schemas come from MCP servers a tenant names, so they are untrusted input: a schema
 * larger than MAX_SCHEMA_CHARS, one holding a pattern RE2 cannot run, or one Ajv cannot compile makes its
 * tool unusable (the registry leaves such a tool out, with a warning on the run).
 */

/** What is wrong with an input, in words for the model; undefined when the input is valid. */
export type InputCheck = (input: unknown) => string | undefined;

const MAX_SCHEMA_CHARS = 64 * 1024;
/** Distinct schema texts kept compiled (LRU); an evicted one is dropped from Ajv as well. */
const MAX_CACHED_TEXTS = 2_000;
const MAX_ISSUES = 10;

// The draft the schema's $schema names; 2020-12 without one, the dialect of MCP and of zod's JSON
// Schema output. Not strict: real schemas carry keywords and formats Ajv does not know, which describe
// but do not constrain. Input is never changed (no defaults, coercion or removal): the tool gets
// exactly what the model sent. Patterns (`pattern`, `patternProperties`) run on the linear-time engine
// (linear-regexp.ts), so no input stalls the loop.
const ajvs = {} as Record<Dialect, Ajv.default>;
for (const dialect of ['draft-07', '2019-09', '2020-12'] as const) {
  ajvs[dialect] = ajvFor(dialect, { allErrors: true, verbose: true, strict: false, logger: false, code: { regExp: linearRegExpEngine } });
  addFormats.default(ajvs[dialect]);
}

type Compiled = { check: InputCheck } | { unusable: string };
const byObject = new WeakMap<object, Compiled>();
const byText = new Map<string, { compiled: Compiled; schema?: object; ajv?: Ajv.default }>();

/**
 * The check of inputs against `schema`, compiled on first use; throws, with the reason, when the
 * schema cannot be used to check anything.
 */
export function inputCheck(schema: Record<string, unknown>): InputCheck {
  let compiled = byObject.get(schema);
  if (!compiled) {
    compiled = compileByText(schema);
    byObject.set(schema, compiled);
  }
  if ('unusable' in compiled) throw new Error(compiled.unusable);
  return compiled.check;
}

/** Why a call's input does not match its tool's schema (worded as the AI SDK words it), or undefined. */
export function invalidToolInput(tool: { name: string; inputSchema: Record<string, unknown> }, input: unknown): string | undefined {
  let check: InputCheck;
  try {
    check = inputCheck(tool.inputSchema);
  } catch (err) {
    return `Tool ${tool.name} cannot be called: its input schema is unusable (${(err as Error).message})`;
  }
  const wrong = check(input);
  return wrong === undefined ? undefined : `Invalid input for tool ${tool.name}: ${wrong}`;
}

function compileByText(schema: Record<string, unknown>): Compiled {
  // $schema names the draft (compiled by that draft's Ajv, without it); a root $id would collide in
  // Ajv's registry between two tools, and `#/...` references resolve against the root without it.
  const dialect = schemaDialect(schema, '2020-12');
  if (!dialect) return { unusable: `its $schema names no JSON Schema draft taken here (${DIALECT_NAMES})` };
  const ajv = ajvs[dialect];
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  // A schema nested past the JSON bounds is not even serialised to be looked up (it would overflow the stack).
  if (deeperThan(rest, MAX_JSON_DEPTH)) return { unusable: `nested deeper than ${MAX_JSON_DEPTH} levels` };
  const json = JSON.stringify(rest);
  // Cached by draft and text: the same text is another schema under another draft.
  const text = `${dialect} ${json}`;
  const cached = byText.get(text);
  if (cached) {
    // Most recently used last.
    byText.delete(text);
    byText.set(text, cached);
    return cached.compiled;
  }
  let entry: { compiled: Compiled; schema?: object; ajv?: Ajv.default };
  if (json.length > MAX_SCHEMA_CHARS) {
    entry = { compiled: { unusable: `larger than ${MAX_SCHEMA_CHARS} characters` } };
  } else {
    try {
      const validate = ajv.compile(rest);
      entry = { compiled: { check: checker(validate) }, schema: rest, ajv };
    } catch (err) {
      ajv.removeSchema(rest);
      entry = { compiled: { unusable: (err as Error).message } };
    }
  }
  byText.set(text, entry);
  if (byText.size > MAX_CACHED_TEXTS) {
    const [oldestText, oldest] = byText.entries().next().value!;
    byText.delete(oldestText);
    if (oldest.schema) oldest.ajv?.removeSchema(oldest.schema);
  }
  return entry.compiled;
}

function checker(validate: ValidateFunction): InputCheck {
  return (input) => {
    if (validate(input)) return undefined;
    const issues = [...new Set((validate.errors ?? []).map(describe))];
    const shown = issues.slice(0, MAX_ISSUES);
    if (issues.length > shown.length) shown.push(`and ${issues.length - shown.length} more`);
    return shown.join('; ');
  };
}

/** One Ajv error as "<field> <what was expected>", the field as a path (`items[0].name`). */
function describe(e: ErrorObject): string {
  const at = fieldPath(e.instancePath);
  const subject = at || 'input';
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${join(at, String(params.missingProperty))} is required`;
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const field = join(at, String(params.additionalProperty ?? params.unevaluatedProperty));
      const allowed = Object.keys((e.parentSchema?.properties as Record<string, unknown> | undefined) ?? {});
      return `${field} is not an allowed field${allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''}`;
    }
    case 'type':
      return `${subject} must be ${[params.type].flat().join(' or ')} (got ${jsonType(e.data)})`;
    case 'enum':
      return `${subject} must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `${subject} must be ${JSON.stringify(params.allowedValue)}`;
    default:
      return `${subject} ${e.message ?? `does not match the schema (${e.keyword})`}`;
  }
}

/** A JSON Pointer (`/items/0/name`) as a field path (`items[0].name`); the root is ''. */
function fieldPath(pointer: string): string {
  if (!pointer) return '';
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, s) => (/^\d+$/.test(s) ? `${path}[${s}]` : join(path, s)), '');
}

const join = (path: string, field: string) => (path ? `${path}.${field}` : field);

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
