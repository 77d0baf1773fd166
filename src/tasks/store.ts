import { sql, type ExpressionBuilder, type Kysely, type Selectable, type Updateable } from 'kysely';
import type { Dialect } from '../db/database.js';
import type { Database, TaskFireTable, TaskJobTable, TaskTable } from '../db/schema.js';
import { countRows } from '../db/count.js';

/** SQL for tasks, their work queue (task_jobs) and their fire history (task_fires). */

export type TaskRow = Selectable<TaskTable>;
export type JobRow = Selectable<TaskJobTable>;
export type FireRow = Selectable<TaskFireTable>;
type Executor = Kysely<Database>;

/** Job states; `queued`, `claimed` and `running` are the task's active work. */
export const ACTIVE_JOB_STATES = ['queued', 'claimed', 'running'] as const;

// ------------------------------------------------------------------ tasks

export interface TaskFilter {
  agentId?: string;
  teamId?: string;
  appId?: string;
  status?: string;
  type?: string;
}

type TaskWithQueue = TaskRow & { queued_at: string | null };

/** A page of a list: how many rows, after how many. */
export interface Page {
  limit: number;
  offset: number;
}

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
export function newTaskRow(fields: Pick<TaskRow, 'id' | 'tenant_id' | 'agent_id' | 'app_id' | 'name' | 'description' | 'status' | 'created_at'> & Partial<TaskRow>): TaskRow {
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
export function transitionTask(db: Executor, { taskId, from, set }: { taskId: string; from: readonly string[]; set: Updateable<TaskTable> }) {
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
  const q = db.selectFrom('tasks').where('tenant_id', '=', tenantId).where('deleted_at', 'is', null).where('status', '=', 'awaiting_approval');
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
export async function claimFireTime(db: Executor, { taskId, due, next, at }: { taskId: string; due: string; next: string | null; at: string }): Promise<boolean> {
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

// ------------------------------------------------------------------ jobs

export function insertJob(db: Executor, row: JobRow) {
  return db.insertInto('task_jobs').values(row).execute();
}

/** A job's own input (merged over the task's for its run). */
export function setJobInput(db: Executor, id: string, input: string) {
  return db.updateTable('task_jobs').set({ input }).where('id', '=', id).execute();
}

export function findJobByRun(db: Executor, runId: string) {
  return db.selectFrom('task_jobs').selectAll().where('run_id', '=', runId).executeTakeFirst();
}

export function jobsOfTask(db: Executor, taskId: string, states: readonly string[]) {
  return db.selectFrom('task_jobs').selectAll().where('task_id', '=', taskId).where('state', 'in', [...states]).orderBy('id').execute();
}

/**
 * Earliest deadline first, jobs without one last: the expression of the task_jobs_claim index
 * (migration 0010), so the claim walks that index instead of sorting the queue.
 */
const DUE_ORDER = sql<string>`coalesce(j.due_at, '9999-12-31T23:59:59.999Z')`;
/** DUE_ORDER's stand-in for "no dueAt", for ordering jobs already read. */
const NO_DUE_AT = '9999-12-31T23:59:59.999Z';

/**
 * The next job a dispatcher may take: queued and due, highest priority first, then earliest dueAt
 * (none last), then oldest. A serial job (overlap policy `queue`) waits while another job of its
 * task is claimed or running, or queued ahead of it.
 */
function nextCandidates(db: Executor, now: string, limit: number) {
  return db
    .selectFrom('task_jobs as j')
    .select('j.id')
    .where('j.state', '=', 'queued')
    .where('j.available_at', '<=', now)
    .where((eb) =>
      eb.or([
        eb('j.serial', '=', 0),
        eb.not(
          eb.exists(
            eb
              .selectFrom('task_jobs as p')
              .select('p.id')
              .whereRef('p.task_id', '=', 'j.task_id')
              .whereRef('p.id', '<>', 'j.id')
              .where((e) => e.or([e('p.state', 'in', ['claimed', 'running']), e.and([e('p.state', '=', 'queued'), e('p.id', '<', e.ref('j.id'))])])),
          ),
        ),
      ]),
    )
    .orderBy('j.priority_rank', 'desc')
    .orderBy(DUE_ORDER)
    .orderBy('j.id', 'asc')
    .limit(limit);
}

/** The claim order of `nextCandidates`, for jobs already read. */
function byClaimOrder(a: JobRow, b: JobRow): number {
  const due = (j: JobRow) => j.due_at ?? NO_DUE_AT;
  return b.priority_rank - a.priority_rank || (due(a) < due(b) ? -1 : due(a) > due(b) ? 1 : 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export interface ClaimInput {
  owner: string;
  now: string;
  leaseUntil: string;
}

/** A job's move to claimed by this process: leased, and one more attempt counted. */
function claimedBy(claim: ClaimInput) {
  return (eb: ExpressionBuilder<Database, 'task_jobs'>) => ({
    state: 'claimed',
    lease_owner: claim.owner,
    claimed_by: claim.owner,
    lease_expires_at: claim.leaseUntil,
    attempts: eb('attempts', '+', 1),
    updated_at: claim.now,
  });
}

/**
 * Takes up to `limit` next jobs under a lease, in one statement, in claim order:
 * `with c as materialized (next candidates) update ... from c returning *`. Empty: nothing to take.
 *
 * The one place the dialects differ. On PostgreSQL the candidate rows are locked with
 * `FOR UPDATE SKIP LOCKED`, so concurrent dispatchers each take different rows instead of queueing
 * behind one another; a locked candidate is re-checked against the candidate conditions when it is
 * locked, so it is still queued. SQLite has no row locks and a single writer: the statement is atomic.
 *
 * Why this shape: a dispatcher with several free slots takes several jobs per statement (a burst of
 * tasks costs one claim per batch, not one per job). The candidates are a materialized CTE joined by
 * primary key, and the update has no condition of its own: `where id in (candidates)` let PostgreSQL
 * re-run the locking subquery for every queued row (one `limit 1` claim took all 10,000 jobs), and a
 * `state = 'queued'` condition on the updated table let it scan the queue as the join's outer side
 * (docs/scheduling.md).
 */
export async function claimNextJobs(db: Executor, dialect: Dialect, claim: ClaimInput, limit: number): Promise<JobRow[]> {
  let candidates = nextCandidates(db, claim.now, limit);
  if (dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
  const rows = await db
    .with((cte) => cte('c').materialized(), () => candidates)
    .updateTable('task_jobs')
    .set(claimedBy(claim))
    .from('c')
    .whereRef('task_jobs.id', '=', 'c.id')
    .returningAll()
    .execute();
  // PostgreSQL's `returning *` also returns the CTE's `id` (the same value); SQLite's only the table's.
  return (rows as JobRow[]).sort(byClaimOrder);
}

/** Compare-and-set queued -> claimed (counts an attempt); answers the claimed job, or undefined. */
export function claimJob(db: Executor, id: string, claim: ClaimInput): Promise<JobRow | undefined> {
  return db.updateTable('task_jobs').set(claimedBy(claim)).where('id', '=', id).where('state', '=', 'queued').returningAll().executeTakeFirst();
}

/** The claimed job's run has started: the run's own lease takes over from the job's. */
export function markJobRunning(db: Executor, { jobId, owner, runId, at }: { jobId: string; owner: string; runId: string; at: string }) {
  return db
    .updateTable('task_jobs')
    .set({ state: 'running', run_id: runId, lease_expires_at: null, updated_at: at })
    .where('id', '=', jobId)
    .where('state', '=', 'claimed')
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
}

export function renewJobLeases(db: Executor, { owner, jobIds, until }: { owner: string; jobIds: string[]; until: string }) {
  return db
    .updateTable('task_jobs')
    .set({ lease_expires_at: until })
    .where('id', 'in', jobIds)
    .where('lease_owner', '=', owner)
    .where('state', '=', 'claimed')
    .execute();
}

export interface JobMove {
  jobId: string;
  /** The states the job may be in; it moves only from one of them. */
  from: readonly string[];
  set: Updateable<TaskJobTable>;
  /** When given, the job's run must still be this one. */
  runId?: string;
  /** When given, the job's lease must still expire then (nobody renewed it since). */
  leaseExpiresAt?: string | null;
  /** When given, the job must still be claimed by this owner (nobody else took it over since). */
  leaseOwner?: string;
}

/**
 * Compare-and-set from one of `from` states (and, when given, the run or lease the caller saw):
 * exactly one caller moves a job on.
 */
export async function moveJob(db: Executor, { jobId, from, set, runId, leaseExpiresAt, leaseOwner }: JobMove): Promise<boolean> {
  let q = db.updateTable('task_jobs').set(set).where('id', '=', jobId).where('state', 'in', [...from]);
  if (runId !== undefined) q = q.where('run_id', '=', runId);
  if (leaseExpiresAt !== undefined) q = q.where('lease_expires_at', leaseExpiresAt === null ? 'is' : '=', leaseExpiresAt);
  if (leaseOwner !== undefined) q = q.where('lease_owner', '=', leaseOwner);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Claimed jobs whose dispatcher stopped renewing the lease (it died before or without a run). */
export function expiredClaims(db: Executor, now: string, limit: number) {
  return db.selectFrom('task_jobs').selectAll().where('state', '=', 'claimed').where('lease_expires_at', '<', now).limit(limit).execute();
}

/** Jobs whose run started before `before` and is executing somewhere (or ended unheard of). */
export function runningJobs(db: Executor, before: string, limit: number) {
  return db
    .selectFrom('task_jobs')
    .selectAll()
    .where('state', '=', 'running')
    .where('updated_at', '<', before)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

// ------------------------------------------------------------------ fires

/** Records a fire decision once per (task, fire key); false when it was already recorded. */
export async function insertFire(db: Executor, row: FireRow): Promise<boolean> {
  const r = await db
    .insertInto('task_fires')
    .values(row)
    .onConflict((oc) => oc.columns(['task_id', 'fire_key']).doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) === 1;
}

export function findFire(db: Executor, taskId: string, fireKey: string) {
  return db.selectFrom('task_fires').selectAll().where('task_id', '=', taskId).where('fire_key', '=', fireKey).executeTakeFirst();
}

export async function listFires(db: Executor, { tenantId, taskId, limit, offset }: { tenantId: string; taskId: string } & Page) {
  const q = db.selectFrom('task_fires').where('tenant_id', '=', tenantId).where('task_id', '=', taskId);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    countRows(q),
  ]);
  return { rows, total: count };
}
