import { type Static, Type } from 'typebox';
import { InvalidInput } from '../errors.js';
import { compileResponseFormat, RESPONSE_SCHEMA_MAX_BYTES, ResponseFormatError } from '../runtime/structured-output.js';

/** `responseFormat` of execute, chat and stream (and a task's input): the shape the final answer must have. */
export const ResponseFormatSchema = Type.Object(
  {
    type: Type.Literal('json_schema'),
    schema: Type.Record(Type.String(), Type.Unknown(), {
      description: `a JSON Schema (draft-07) with type "object" at its root, at most ${RESPONSE_SCHEMA_MAX_BYTES} bytes of JSON; a pattern or format needs a maxLength`,
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
  if (!format) return;
  try {
    compileResponseFormat(format);
  } catch (err) {
    if (!(err instanceof ResponseFormatError)) throw err;
    const field = { path: `${path}.${err.field}`, message: err.message };
    throw new InvalidInput(`${field.path} ${field.message}`, [field]);
  }
}
