import { Type } from 'typebox';
import { parseJsonColumn } from '../db/json-column.js';

/**
 * The JSON columns of tasks, task_jobs and task_fires, parsed through their schemas: a value that
 * does not fit is a damaged row, reported as such, not passed on under a cast.
 */

const JsonObject = Type.Record(Type.String(), Type.Unknown());
const StoredError = Type.Object({ code: Type.String(), message: Type.String() });

/** A JSON object column: task and job `input`, fire `detail`, `approval_payload`. */
export const objectColumn = (text: string, column: string) => parseJsonColumn(JsonObject, text, column);

/** A nullable JSON object column; empty is null. */
export const optionalObjectColumn = (text: string | null, column: string) => (text ? objectColumn(text, column) : null);

/** A stored error (`{ code, message }`): a task's `last_error`; empty is null. */
export const errorColumn = (text: string | null, column: string) => (text ? parseJsonColumn(StoredError, text, column) : null);
