import type { Kysely, Selectable } from 'kysely';
import type { Database, TaskFireTable, TaskJobTable, TaskTable } from '../../db/schema.js';

export type TaskRow = Selectable<TaskTable>;
export type JobRow = Selectable<TaskJobTable>;
export type FireRow = Selectable<TaskFireTable>;
export type Executor = Kysely<Database>;

export type { Page } from '../../db/count.js';
