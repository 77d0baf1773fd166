import type { Static, TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';

/**
 * JSON kept as text (columns, sealed secrets, notification payloads) parsed through its schema: a value
 * that does not fit is damage, reported as such, never passed on under a cast. Each schema is compiled
 * once, on first use, so the check costs microseconds on hot reads (GET /agents/:id).
 */

class DamagedJson extends Error {}

const compiled = new WeakMap<TSchema, Validator>();

function validatorOf(schema: TSchema): Validator {
  let validator = compiled.get(schema);
  if (!validator) {
    validator = Compile(schema);
    compiled.set(schema, validator);
  }
  return validator;
}

/** `text` parsed and checked against `schema`; `what` names it in the error (e.g. `a signal notification`). */
export function parseJson<T extends TSchema>(schema: T, text: string, what: string): Static<T> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DamagedJson(`${what} is not JSON`);
  }
  if (!validatorOf(schema).Check(value)) throw new DamagedJson(`${what} does not fit its schema`);
  return value as Static<T>;
}

/** A stored JSON value (a column, a sealed secret opened) through its schema; `column` names it, e.g. `agents.tools`. */
export const parseJsonColumn = <T extends TSchema>(schema: T, text: string, column: string): Static<T> =>
  parseJson(schema, text, `the stored ${column}`);
