import type { JSONSchema7, LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import secureMetaSchema from 'ajv/lib/refs/json-schema-secure.json' with { type: 'json' };
import { outOfBounds } from '../json-bounds.js';

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
// secure meta-schema's rule (a `format` needs a `maxLength`) but not validated (no format library).
const ajv = new Ajv.default({ strict: false, validateFormats: false, allErrors: false });
const isSecure = ajv.compile(secureMetaSchema);
/** Compiled schemas by their JSON text: the same schema sent again is not compiled again. */
const compiled = new Map<string, ValidateFunction>();
const COMPILED_KEPT = 200;

/**
 * Checks and compiles a caller's schema: its size, an object at the root, valid JSON Schema (draft-07,
 * as Ajv compiles it), and safe to run on untrusted answers (Ajv's json-schema-secure rules: a
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
  if (!isSecure(format.schema)) {
    throw new ResponseFormatError('schema', `the schema is unsafe to validate untrusted answers with: ${describe(isSecure.errors)}`);
  }
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
