/** SQL for tasks, their work queue (task_jobs) and their fire history (task_fires), one module per table. */

export * from './fires.js';
export * from './jobs.js';
export type { FireRow, JobRow, TaskRow } from './rows.js';
export * from './tasks.js';
