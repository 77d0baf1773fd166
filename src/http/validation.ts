import Ajv, { type ErrorObject, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { CompiledPerSchema } from './compiled-per-schema.js';

/**
 * Two validators: query strings and path parameters are text, so they are coerced to the schema's
 * types; JSON bodies are not coerced, so `"limit": "5"` in a body is a clear 400, not a guess.
 * Unknown body fields are rejected rather than silently dropped, so a misspelt field never loses data.
 */
/** Schema keyword marking a request body that may be left out entirely. */
export const OPTIONAL_BODY = 'x-optional-body';

function makeAjv(coerceTypes: Options['coerceTypes']) {
  const ajv = new Ajv.default({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: true,
    strict: false,
  });
  addFormats.default(ajv);
  return ajv;
}

/** The keywords that check a collection's members, by the keyword bounding the collection's size. */
const MEMBERS_OF: Record<string, string[]> = {
  maxItems: ['items', 'prefixItems', 'additionalItems', 'contains', 'uniqueItems'],
  maxProperties: ['properties', 'patternProperties', 'additionalProperties', 'propertyNames', 'dependentSchemas'],
};
/** Keywords whose values are data, not schemas. */
const DATA_KEYWORDS = new Set(['default', 'const', 'enum', 'examples', 'example']);

/**
 * A copy of a schema in which a collection's members are checked only when the collection is within
 * its bound (`maxItems`, `maxProperties`): asked for every error, Ajv would otherwise check each of
 * the 90,000 items a 1 MiB body holds against an array allowed 64, and report all their errors. Past
 * the bound the one error is the bound's; within it, every error is reported as before.
 */
function boundsFirst(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(boundsFirst);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [keyword, value] of Object.entries(schema)) out[keyword] = DATA_KEYWORDS.has(keyword) ? value : boundsFirst(value);
  for (const [bound, members] of Object.entries(MEMBERS_OF)) {
    if (typeof out[bound] !== 'number') continue;
    const moved = members.filter((k) => k in out);
    if (!moved.length) continue;
    const then = Object.fromEntries(moved.map((k) => [k, out[k]]));
    for (const k of moved) delete out[k];
    out.allOf = [...(Array.isArray(out.allOf) ? out.allOf : []), { if: { [bound]: out[bound] }, then }];
  }
  return out;
}

/**
 * The compiled validators, shared by every app of the process, so an app built again (tests build
 * hundreds) finds each route's validator already compiled.
 */
let compilers: { coercing: Ajv.default; strict: Ajv.default; compiled: CompiledPerSchema<ValidateFunction> } | undefined;

type ValidateFunction = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

function sharedCompilers(sharedSchemas: object[]) {
  if (!compilers) {
    compilers = { coercing: makeAjv('array'), strict: makeAjv(false), compiled: new CompiledPerSchema() };
    for (const schema of sharedSchemas) {
      compilers.coercing.addSchema(schema);
      compilers.strict.addSchema(boundsFirst(schema) as object);
    }
  }
  return compilers;
}

function compileValidator(coercing: Ajv.default, strict: Ajv.default, schema: object, httpPart: string | undefined): ValidateFunction {
  if (httpPart !== 'body') return coercing.compile(schema);
  const validate = strict.compile(boundsFirst(schema) as object);
  if (!(schema as Record<string, unknown>)[OPTIONAL_BODY]) return validate;
  // A body marked optional may be absent altogether; when present it must match.
  const optional = (data: unknown) => {
    if (data === undefined || data === null) return true; // Fastify hands an absent body over as null
    const ok = validate(data);
    optional.errors = validate.errors;
    return ok;
  };
  optional.errors = null as typeof validate.errors;
  return optional;
}

export function registerValidation(app: FastifyInstance, sharedSchemas: object[]) {
  const { coercing, strict, compiled } = sharedCompilers(sharedSchemas);
  for (const schema of sharedSchemas) app.addSchema(schema);
  app.setValidatorCompiler(({ schema, httpPart }) => {
    // Query strings, path parameters and headers share the coercing validator.
    const part = httpPart === 'body' ? 'body' : 'text';
    return compiled.get(schema, part, () => compileValidator(coercing, strict, schema, httpPart));
  });
}
