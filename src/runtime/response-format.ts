import { type Static, Type } from 'typebox';
import { Compile } from 'typebox/compile';
import { type FieldError, InvalidInput } from '../errors.js';
import { compileResponseFormat, RESPONSE_SCHEMA_MAX_BYTES, ResponseFormatError } from './structured-output.js';

/** `responseFormat` of execute, chat and stream (and a task's input): the shape the final answer must have. */
export const ResponseFormatSchema = Type.Object(
  {
    type: Type.Literal('json_schema'),
    schema: Type.Record(Type.String(), Type.Unknown(), {
      description: `a JSON Schema (draft-07, 2019-09 or 2020-12 by its $schema; draft-07 without one) with type "object" at its root, at most ${RESPONSE_SCHEMA_MAX_BYTES} bytes of JSON; a pattern or format needs a maxLength`,
    }),
    name: Type.Optional(
      Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'a name for the shape, given to providers that take one' }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'ask for a structured answer: it is validated against the schema (one repair attempt, else the run fails with invalid_output) and returned as structuredOutput',
  },
);
export type ResponseFormat = Static<typeof ResponseFormatSchema>;

/** Refuses a schema that cannot be used (too large, not an object, unsafe, does not compile): a 400 naming the field under `path`. */
export function checkResponseFormat(format: ResponseFormat | undefined, path: string): void {
  const errors = schemaErrors(format, path);
  if (errors.length) throw new InvalidInput(`${errors[0].path} ${errors[0].message}`, errors);
}

function schemaErrors(format: ResponseFormat | undefined, path: string): FieldError[] {
  if (!format) return [];
  try {
    compileResponseFormat(format);
    return [];
  } catch (err) {
    if (!(err instanceof ResponseFormatError)) throw err;
    return [{ path: `${path}.${err.field}`, message: err.message }];
  }
}

const isResponseFormat = Compile(ResponseFormatSchema);

/**
 * A task's input may hold `responseFormat` (the task's runs then answer with that shape): what is
 * wrong with it, as field errors under `path` (e.g. `body.input`); none when the input holds none.
 */
export function inputResponseFormatErrors(input: unknown, path: string): FieldError[] {
  if (!input || typeof input !== 'object' || !('responseFormat' in input)) return [];
  const format = (input as { responseFormat: unknown }).responseFormat;
  if (!isResponseFormat.Check(format)) {
    return [{ path: `${path}.responseFormat`, message: 'must be { type: "json_schema", schema: {...}, name? }' }];
  }
  return schemaErrors(format, `${path}.responseFormat`);
}

/** A task run's input split: its `responseFormat` (checked when the input was given), and what the model is shown. */
export function splitResponseFormat(input: Record<string, unknown>): { responseFormat?: ResponseFormat; rest: Record<string, unknown> } {
  const { responseFormat, ...rest } = input;
  return isResponseFormat.Check(responseFormat) ? { responseFormat, rest } : { rest: input };
}
