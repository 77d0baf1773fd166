import { Type, type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';

/**
 * The JSON columns of tasks, task_jobs and task_fires, parsed through their schemas: a value that
 * does not fit is a damaged row, reported as such, not passed on under a cast.
 */

const JsonObject = Type.Record(Type.String(), Type.Unknown());
const StoredError = Type.Object({ code: Type.String(), message: Type.String() });

function parseColumn<T extends TSchema>(schema: T, text: string, column: string): Static<T> {
  const value: unknown = JSON.parse(text);
  if (!Value.Check(schema, value)) throw new Error(`the stored ${column} does not fit its schema`);
  return value;
}

/** A JSON object column: task and job `input`, fire `detail`, `approval_payload`. */
export const objectColumn = (text: string, column: string) => parseColumn(JsonObject, text, column);

/** A nullable JSON object column; empty is null. */
export const optionalObjectColumn = (text: string | null, column: string) => (text ? objectColumn(text, column) : null);

/** A stored error (`{ code, message }`): a task's `last_error`; empty is null. */
export const errorColumn = (text: string | null, column: string) => (text ? parseColumn(StoredError, text, column) : null);
