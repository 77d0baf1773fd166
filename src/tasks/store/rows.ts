import type { Kysely, Selectable } from 'kysely';
import type { Database, TaskFireTable, TaskJobTable, TaskTable } from '../../db/schema.js';

export type TaskRow = Selectable<TaskTable>;
export type JobRow = Selectable<TaskJobTable>;
export type FireRow = Selectable<TaskFireTable>;
export type Executor = Kysely<Database>;

/** A page of a list: how many rows, after how many. */
export interface Page {
  limit: number;
  offset: number;
}
