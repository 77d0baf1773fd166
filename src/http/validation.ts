import Ajv, { type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

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

export function registerValidation(app: FastifyInstance, sharedSchemas: object[]) {
  const coercing = makeAjv('array');
  const strict = makeAjv(false);
  for (const schema of sharedSchemas) {
    coercing.addSchema(schema);
    strict.addSchema(schema);
    app.addSchema(schema);
  }
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart !== 'body') return coercing.compile(schema);
    const validate = strict.compile(schema);
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
  });
}
