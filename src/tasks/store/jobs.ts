import { sql, type ExpressionBuilder, type SelectQueryBuilder, type Updateable } from 'kysely';
import type { Dialect } from '../../db/database.js';
import type { Database, TaskJobTable } from '../../db/schema.js';
import type { Executor, JobRow } from './rows.js';

/** SQL for the work queue (task_jobs): enqueue, claim under a lease, move on, recover. */

/** Job states; `queued`, `claimed` and `running` are the task's active work. */
export const ACTIVE_JOB_STATES = ['queued', 'claimed', 'running'] as const;

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
  return db
    .selectFrom('task_jobs')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('state', 'in', [...states])
    .orderBy('id')
    .execute();
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
              .where((e) =>
                e.or([e('p.state', 'in', ['claimed', 'running']), e.and([e('p.state', '=', 'queued'), e('p.id', '<', e.ref('j.id'))])]),
              ),
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
 * On PostgreSQL the candidate rows are locked with `FOR UPDATE SKIP LOCKED`, so concurrent dispatchers
 * each take different rows instead of queueing behind one another; a locked candidate is re-checked
 * against the candidate conditions when it is locked, so it is still queued. SQLite has no row locks
 * and a single writer: the statement is atomic.
 *
 * Why this shape: a dispatcher with several free slots takes several jobs per statement (a burst of
 * tasks costs one claim per batch, not one per job). The candidates are a materialized CTE joined by
 * primary key, and the update has no condition of its own: `where id in (candidates)` let PostgreSQL
 * re-run the locking subquery for every queued row (one `limit 1` claim took all 10,000 jobs), and a
 * `state = 'queued'` condition on the updated table let it scan the queue as the join's outer side
 * (docs/scheduling.md).
 */
export async function claimNextJobs(db: Executor, dialect: Dialect, claim: ClaimInput, limit: number): Promise<JobRow[]> {
  const rows = await updateJobsOnce(db, dialect, nextCandidates(db, claim.now, limit))
    .set(claimedBy(claim))
    .returningAll()
    .execute();
  // PostgreSQL's `returning *` also returns the CTE's `id` (the same value); SQLite's only the table's.
  return (rows as JobRow[]).sort(byClaimOrder);
}

/** Compare-and-set queued -> claimed (counts an attempt); answers the claimed job, or undefined. */
export function claimJob(db: Executor, id: string, claim: ClaimInput): Promise<JobRow | undefined> {
  return db
    .updateTable('task_jobs')
    .set(claimedBy(claim))
    .where('id', '=', id)
    .where('state', '=', 'queued')
    .returningAll()
    .executeTakeFirst();
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

/**
 * Extends the leases of the claimed jobs this process holds. On PostgreSQL a job whose row another
 * transaction has locked (a batch of run starts moving jobs to running, locking rows in its own order)
 * is skipped, not waited for: waiting deadlocked with such a batch. It is renewed the next time, a third
 * of a lease later; only a lock held across three turns would let its lease lapse, and the batches that
 * take these locks last milliseconds.
 */
export async function renewJobLeases(
  db: Executor,
  dialect: Dialect,
  { owner, jobIds, until }: { owner: string; jobIds: string[]; until: string },
): Promise<void> {
  const held = db
    .selectFrom('task_jobs')
    .select('id')
    .where('id', 'in', jobIds)
    .where('lease_owner', '=', owner)
    .where('state', '=', 'claimed');
  await updateJobsOnce(db, dialect, held).set({ lease_expires_at: until }).execute();
}

/**
 * `with c as materialized (rows) update task_jobs ... from c where task_jobs.id = c.id`, for the caller
 * to `set`: the rows are chosen (and on PostgreSQL locked, `FOR UPDATE SKIP LOCKED`, passing over rows
 * another transaction holds) once, then joined by primary key (claimNextJobs says why this shape).
 */
function updateJobsOnce<DB extends Database, TB extends keyof DB & string>(
  db: Executor,
  dialect: Dialect,
  rows: SelectQueryBuilder<DB, TB, { id: string }>,
) {
  const chosen = dialect === 'postgres' ? rows.forUpdate().skipLocked() : rows;
  return db
    .with(
      (cte) => cte('c').materialized(),
      () => chosen,
    )
    .updateTable('task_jobs')
    .from('c')
    .whereRef('task_jobs.id', '=', 'c.id');
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
  let q = db
    .updateTable('task_jobs')
    .set(set)
    .where('id', '=', jobId)
    .where('state', 'in', [...from]);
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

/** The queue's state for the metrics: jobs queued and running (claimed included), and the oldest due queued job's availability. */
export async function queueStats(db: Executor, now: string): Promise<{ queued: number; running: number; oldestDueAt: string | null }> {
  const [byState, oldest] = await Promise.all([
    db
      .selectFrom('task_jobs')
      .select(['state', sql<number | string>`count(*)`.as('n')])
      .where('state', 'in', [...ACTIVE_JOB_STATES])
      .groupBy('state')
      .execute(),
    db
      .selectFrom('task_jobs')
      .select(sql<string | null>`min(available_at)`.as('at'))
      .where('state', '=', 'queued')
      .where('available_at', '<=', now)
      .executeTakeFirst(),
  ]);
  const count = (states: string[]) => byState.filter((r) => states.includes(r.state)).reduce((sum, r) => sum + Number(r.n), 0);
  return { queued: count(['queued']), running: count(['claimed', 'running']), oldestDueAt: oldest?.at ?? null };
}
