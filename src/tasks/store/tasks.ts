import type { Updateable } from 'kysely';
import { countRows } from '../../db/count.js';
import type { TaskTable } from '../../db/schema.js';
import type { Executor, Page, TaskRow } from './rows.js';

/** SQL for tasks (the rows the API shows, their schedules and triggers). */

export interface TaskFilter {
  agentId?: string;
  teamId?: string;
  appId?: string;
  status?: string;
  type?: string;
}

type TaskWithQueue = TaskRow & { queued_at: string | null };

/** Tasks with `queued_at`: when their earliest queued job may start (part of nextRunAt). */
function withQueue(db: Executor) {
  return db
    .selectFrom('tasks')
    .selectAll('tasks')
    .select((eb) =>
      eb
        .selectFrom('task_jobs')
        .select((e) => e.fn.min<string | null>('task_jobs.available_at').as('m'))
        .whereRef('task_jobs.task_id', '=', 'tasks.id')
        .where('task_jobs.state', '=', 'queued')
        .as('queued_at'),
    );
}

export async function listTasks(db: Executor, { tenantId, filter, limit, offset }: { tenantId: string; filter: TaskFilter } & Page) {
  let q = db.selectFrom('tasks').where('tenant_id', '=', tenantId).where('deleted_at', 'is', null);
  if (filter.agentId) q = q.where('agent_id', '=', filter.agentId);
  if (filter.teamId) q = q.where('team_id', '=', filter.teamId);
  if (filter.appId) q = q.where('app_id', '=', filter.appId);
  if (filter.status) q = q.where('status', '=', filter.status);
  if (filter.type) q = q.where('type', '=', filter.type);
  const ids = q.select('id');
  const [rows, count] = await Promise.all([
    withQueue(db).where('tasks.id', 'in', ids).orderBy('tasks.id', 'desc').limit(limit).offset(offset).execute(),
    countRows(q),
  ]);
  return { rows: rows as TaskWithQueue[], total: count };
}

export function findTask(db: Executor, tenantId: string, id: string) {
  return withQueue(db)
    .where('tasks.tenant_id', '=', tenantId)
    .where('tasks.id', '=', id)
    .where('tasks.deleted_at', 'is', null)
    .executeTakeFirst() as Promise<TaskWithQueue | undefined>;
}

/** Any tenant: for the public webhook route and background work. */
export function findTaskById(db: Executor, id: string) {
  return db.selectFrom('tasks').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

/** A task row with every optional column empty and the default policies; callers set the rest. */
export function newTaskRow(
  fields: Pick<TaskRow, 'id' | 'tenant_id' | 'agent_id' | 'app_id' | 'name' | 'description' | 'status' | 'created_at'> & Partial<TaskRow>,
): TaskRow {
  return {
    team_id: null,
    type: 'one_time',
    schedule: null,
    timezone: null,
    priority: 'medium',
    due_at: null,
    input: '{}',
    requires_approval: 0,
    misfire_policy: 'skip',
    overlap_policy: 'skip',
    max_attempts: 1,
    backoff_seconds: 10,
    trigger_type: null,
    trigger_event: null,
    trigger_task_id: null,
    webhook_secret: null,
    approval_action: null,
    approval_payload: null,
    requested_by_type: null,
    requested_by_id: null,
    decision: null,
    decided_by_type: null,
    decided_by_id: null,
    decided_at: null,
    next_run_at: null,
    last_run_id: null,
    last_run_at: null,
    last_error: null,
    created_by: null,
    updated_at: fields.created_at,
    deleted_at: null,
    ...fields,
  };
}

export function insertTask(db: Executor, row: TaskRow) {
  return db.insertInto('tasks').values(row).execute();
}

export function updateTask(db: Executor, id: string, patch: Updateable<TaskTable>) {
  return db.updateTable('tasks').set(patch).where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

/** Compare-and-set on status: the transition happens only from one of `from`. */
export function transitionTask(
  db: Executor,
  { taskId, from, set }: { taskId: string; from: readonly string[]; set: Updateable<TaskTable> },
) {
  return db
    .updateTable('tasks')
    .set(set)
    .where('id', '=', taskId)
    .where('status', 'in', [...from])
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** A run of the task ended: its status becomes the task's, unless a newer run started meanwhile. */
export interface RunEnd {
  taskId: string;
  runId: string;
  status: string;
  /** The run's error as JSON, or null. */
  error: string | null;
  at: string;
}

export function recordRunEnd(db: Executor, { taskId, runId, status, error, at }: RunEnd) {
  return db
    .updateTable('tasks')
    .set({ status, last_error: error, updated_at: at })
    .where('id', '=', taskId)
    .where('last_run_id', '=', runId)
    .executeTakeFirst();
}

export async function listPendingApproval(db: Executor, { tenantId, limit, offset }: { tenantId: string } & Page) {
  const q = db
    .selectFrom('tasks')
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null)
    .where('status', '=', 'awaiting_approval');
  const [rows, count] = await Promise.all([
    withQueue(db).where('tasks.id', 'in', q.select('id')).orderBy('tasks.id', 'asc').limit(limit).offset(offset).execute(),
    countRows(q),
  ]);
  return { rows: rows as TaskWithQueue[], total: count };
}

/** Scheduled tasks whose next cron time has come. */
export function dueSchedules(db: Executor, now: string, limit: number) {
  return db
    .selectFrom('tasks')
    .selectAll()
    .where('type', '=', 'scheduled')
    .where('next_run_at', '<=', now)
    .where('deleted_at', 'is', null)
    .orderBy('next_run_at')
    .limit(limit)
    .execute();
}

/**
 * Claims one cron time: next_run_at moves from `due` to `next` only if it still is `due`, so
 * exactly one replica wins each fire time (the loser updates no row).
 */
export async function claimFireTime(
  db: Executor,
  { taskId, due, next, at }: { taskId: string; due: string; next: string | null; at: string },
): Promise<boolean> {
  const r = await db
    .updateTable('tasks')
    .set({ next_run_at: next, updated_at: at })
    .where('id', '=', taskId)
    .where('next_run_at', '=', due)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Triggered tasks listening for `event` of the source task. */
export function eventListeners(db: Executor, { tenantId, sourceTaskId, event }: { tenantId: string; sourceTaskId: string; event: string }) {
  return db
    .selectFrom('tasks')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('trigger_type', '=', 'event')
    .where('trigger_task_id', '=', sourceTaskId)
    .where('trigger_event', '=', event)
    .where('deleted_at', 'is', null)
    .execute();
}

/** Tasks awaiting a human's approval, in every tenant (the metrics' gauge). */
export function countAwaitingApproval(db: Executor): Promise<number> {
  return countRows(db.selectFrom('tasks').where('deleted_at', 'is', null).where('status', '=', 'awaiting_approval'));
}
