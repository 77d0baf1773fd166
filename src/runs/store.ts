import { exportPages } from '../db/export-pages.js';
import { type Insertable, type Kysely, type Selectable, type Updateable, sql } from 'kysely';
import { countRows } from '../db/count.js';
import type { DeferredInserts } from '../db/group-commit.js';
import { insertRows, placeholders, runPrepared } from '../db/prepared.js';
import type { Database, RunTable } from '../db/schema.js';
import { type TerminalStatus, isActive, statusesBefore } from './statuses.js';

/** SQL for runs and their event log: the only module that names the `runs` and `run_events` tables. */

export type RunRow = Selectable<RunTable>;
type Executor = Kysely<Database>;
type EventRow = { run_id: string; seq: number; event: string; data: string };

export function findRun(db: Executor, tenantId: string, id: string) {
  return db.selectFrom('runs').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export function findRunById(db: Executor, id: string) {
  return db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** One page of runs, newest first. */
interface RunsPage {
  tenantId: string;
  limit: number;
  offset: number;
}

export async function listAgentRuns(db: Executor, { tenantId, agentId, limit, offset }: RunsPage & { agentId: string }) {
  const q = db.selectFrom('runs').where('tenant_id', '=', tenantId).where('agent_id', '=', agentId);
  const [rows, count] = await Promise.all([q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total: count };
}

/** What a tenant-wide list of runs may be narrowed by. */
export interface RunFilter {
  status?: string;
  kind?: string;
  agentId?: string;
  /** created at or after this ISO 8601 instant */
  since?: string;
}

/**
 * A tenant's runs, newest first: ordered by created_at (then id) so runs_tenant_created
 * (tenant_id, created_at) serves both the order and `since`; agentId alone is served by runs_tenant_agent.
 */
export async function listTenantRuns(db: Executor, { tenantId, limit, offset, ...filter }: RunsPage & RunFilter) {
  let q = db.selectFrom('runs').where('tenant_id', '=', tenantId);
  if (filter.status) q = q.where('status', '=', filter.status);
  if (filter.kind) q = q.where('kind', '=', filter.kind);
  if (filter.agentId) q = q.where('agent_id', '=', filter.agentId);
  if (filter.since) q = q.where('created_at', '>=', filter.since);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    countRows(q),
  ]);
  return { rows, total: count };
}

export async function listTaskRuns(
  db: Executor,
  { tenantId, taskId, limit, offset, status }: RunsPage & { taskId: string; status?: string },
) {
  let q = db.selectFrom('runs').where('tenant_id', '=', tenantId).where('task_id', '=', taskId);
  if (status) q = q.where('status', '=', status);
  const [rows, count] = await Promise.all([q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total: count };
}

/** A run's row (and then its events) inserted with the other rows of a group commit's transaction. */
export function deferRun(later: DeferredInserts, row: Insertable<RunTable>) {
  later.insert('runs', row);
}

export function deferEvents(later: DeferredInserts, rows: EventRow[]) {
  for (const row of rows) later.insert('run_events', row);
}

/**
 * Moves a run to a terminal state only from a status it may follow (runs/statuses.ts): exactly one
 * terminal write wins.
 */
export async function finishRun(db: Executor, id: string, patch: Updateable<RunTable> & { status: TerminalStatus }) {
  const from = statusesBefore(patch.status);
  const r = await runPrepared(
    db,
    `finish run from ${from.join('|')} ${Object.keys(patch).join(',')}`,
    (q, p) => q.updateTable('runs').set(placeholders(patch, p)).where('id', '=', p('$id')).where('status', 'in', from),
    { ...patch, $id: id },
  );
  return { numUpdatedRows: r.numAffectedRows ?? 0n };
}

/** Asks the process running a run to cancel it (read at its next lease renewal). */
export function requestCancel(db: Executor, id: string) {
  return db.updateTable('runs').set({ cancel_requested: 1 }).where('id', '=', id).execute();
}

/** Of `ids`, the runs whose cancel was requested (by another process, through the row). */
export function cancelRequested(db: Executor, ids: string[]) {
  return db.selectFrom('runs').select('id').where('id', 'in', ids).where('cancel_requested', '=', 1).execute();
}

/** Whether a run is still going: false when it ended, or does not exist. */
export async function isRunActive(db: Executor, id: string): Promise<boolean> {
  const run = await findRunById(db, id);
  return Boolean(run && isActive(run.status));
}

/**
 * Extends the leases of the runs this process executes, one run per statement: each statement holds one
 * row lock at a time, so it cannot deadlock with a batch of ends updating several of the same rows in
 * another order (one UPDATE over all of them did, on PostgreSQL under load: 40P01, renewal lost).
 */
export async function renewLeases(db: Executor, owner: string, ids: string[], until: string) {
  for (const id of ids) {
    await runPrepared(
      db,
      'renew lease',
      (q, p) =>
        q
          .updateTable('runs')
          .set({ lease_expires_at: p('until') })
          .where('id', '=', p('id'))
          .where('lease_owner', '=', p('owner'))
          .where('status', '=', 'running'),
      { id, owner, until },
    );
  }
}

/** Running runs whose lease expired before `now`: those whose process stopped renewing it. */
export function expiredRunsQuery(db: Executor, now: string, limit: number) {
  return (
    db
      .selectFrom('runs')
      .select(['id', 'tenant_id', 'conversation_id', 'started_at', 'created_at', 'task_id', 'traceparent', 'tool_calls'])
      // A literal, as in the partial index runs_running_lease's WHERE: a plan made without the
      // parameter's value (PostgreSQL's generic plans) could not use the index.
      .where('status', '=', sql.lit('running'))
      .where('lease_expires_at', '<', now)
      .limit(limit)
  );
}

export function expiredRuns(db: Executor, now: string, limit: number) {
  return expiredRunsQuery(db, now, limit).execute();
}

/**
 * The month's spend and what its active runs hold beyond it, for the tenant or one of its agents (run
 * admission, the usage views): a run that has ended counts its cost; one still active (running,
 * queued, awaiting approval) counts its reservation, or its cost should that be larger. A reservation
 * thus lasts exactly as long as its run is active, whichever process ends it (recovery included).
 */
export async function spendAndReservedSince(
  db: Executor,
  scope: { tenantId: string; since: string; agentId?: string },
): Promise<{ spentUsd: number; reservedUsd: number }> {
  // Literals, as the statuses are in the partial index of running runs.
  const active = sql`status in (${sql.lit('queued')}, ${sql.lit('running')}, ${sql.lit('awaiting_approval')})`;
  let q = db
    .selectFrom('runs')
    .select((eb) => [
      eb.fn.sum<number | string | null>('cost').as('spent'),
      eb.fn.sum<number | string | null>(sql`case when ${active} and reserved_usd > cost then reserved_usd - cost else 0 end`).as('held'),
    ])
    .where('tenant_id', '=', scope.tenantId)
    .where('created_at', '>=', scope.since);
  if (scope.agentId) q = q.where('agent_id', '=', scope.agentId);
  const row = await q.executeTakeFirst();
  const usd = (v: number | string | null | undefined) => Math.round(Number(v ?? 0) * 1e9) / 1e9;
  return { spentUsd: usd(row?.spent), reservedUsd: usd(row?.held) };
}

/** The tenant's runs executing now (or one agent's). */
export async function runningRuns(db: Executor, scope: { tenantId: string; agentId?: string }): Promise<number> {
  let q = db
    .selectFrom('runs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('tenant_id', '=', scope.tenantId)
    // A literal, as in the partial index of running runs (runs_running_lease), which may serve it.
    .where('status', '=', sql.lit('running'));
  if (scope.agentId) q = q.where('agent_id', '=', scope.agentId);
  const row = await q.executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Events in as few INSERTs as keep the statement texts few (db/prepared.ts insertRows). */
export function insertEvents(db: Executor, rows: EventRow[]) {
  return insertRows(db, 'run_events', rows);
}

/** The stored rows holding events after `afterSeq` (runs/events.ts storedEvents reads them). */
export function eventsAfter(db: Executor, runId: string, afterSeq: number) {
  return db
    .selectFrom('run_events')
    .select(['seq', 'event', 'data'])
    .where('run_id', '=', runId)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .execute();
}

/** The id of a run's last stored event (0: none yet). */
/** A run's last stored event: its seq (0 when none) and its name. */
export async function lastEvent(db: Executor, runId: string): Promise<{ seq: number; event: string | null }> {
  const row = await db
    .selectFrom('run_events')
    .select(['seq', 'event'])
    .where('run_id', '=', runId)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  return { seq: Number(row?.seq ?? 0), event: row?.event ?? null };
}

/**
 * A running run whose tool call waits for a person: `awaiting_approval`, its result so far, no lease
 * (runs/pause.ts). Only from a status it may follow (running).
 */
export async function pauseRun(db: Executor, id: string, patch: Updateable<RunTable>) {
  const r = await db
    .updateTable('runs')
    .set({ ...patch, status: 'awaiting_approval', lease_owner: null, lease_expires_at: null })
    .where('id', '=', id)
    .where('status', 'in', statusesBefore('awaiting_approval'))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Claims a run awaiting approval for this process: it is `running` again, under this process's lease. */
export async function claimPausedRun(db: Executor, id: string, owner: string, until: string) {
  const r = await db
    .updateTable('runs')
    .set({ status: 'running', lease_owner: owner, lease_expires_at: until, cancel_requested: 0 })
    .where('id', '=', id)
    .where('status', '=', 'awaiting_approval')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Ends a run while it awaits approval (cancelled): only if nobody claimed it meanwhile. */
export async function endPausedRun(db: Executor, id: string, patch: Updateable<RunTable> & { status: TerminalStatus }) {
  const r = await db.updateTable('runs').set(patch).where('id', '=', id).where('status', '=', 'awaiting_approval').executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export function insertSuspension(db: Executor, row: { run_id: string; tenant_id: string; state: string; created_at: string }) {
  return db.insertInto('run_suspensions').values(row).execute();
}

export function findSuspension(db: Executor, runId: string) {
  return db.selectFrom('run_suspensions').selectAll().where('run_id', '=', runId).executeTakeFirst();
}

export function deleteSuspension(db: Executor, runId: string) {
  return db.deleteFrom('run_suspensions').where('run_id', '=', runId).execute();
}

// Retention (retention/sweep.ts through the runs service): small batches, each its own short transaction.

/** One batch of retention: up to `limit` runs of the tenant from before `cutoff`. */
export interface RetentionBatch {
  tenantId: string;
  cutoff: string;
  limit: number;
}

/** Up to `limit` ended runs of the tenant created before `cutoff`, deleted with their events and suspensions; how many. */
export async function deleteEndedRunsBefore(
  db: Executor,
  { tenantId, cutoff, limit }: RetentionBatch,
  /** What other domains keep of these runs, deleted in the same transaction (approvals). */
  alsoDelete: (trx: Executor, runIds: string[]) => Promise<void>,
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('runs')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('created_at', '<', cutoff)
      .where('completed_at', 'is not', null)
      .limit(limit)
      .execute();
    if (!rows.length) return 0;
    const ids = rows.map((r) => r.id);
    await trx.deleteFrom('run_events').where('run_id', 'in', ids).execute();
    await trx.deleteFrom('run_suspensions').where('run_id', 'in', ids).execute();
    await alsoDelete(trx, ids);
    // Only ended runs: one resumed meanwhile (awaiting approval, then running) stays.
    const r = await trx.deleteFrom('runs').where('id', 'in', ids).where('completed_at', 'is not', null).executeTakeFirst();
    return Number(r.numDeletedRows);
  });
}

/**
 * Up to `limit` runs of the tenant that ended before `cutoff` and are not compacted yet: their events
 * deleted but the last (the terminal done or error, so a replay still ends), the runs marked compacted `at`.
 */
export async function compactRunEvents(
  db: Executor,
  { tenantId, cutoff, limit }: RetentionBatch,
  at: string,
): Promise<{ runs: number; events: number }> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('runs')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('completed_at', 'is not', null)
      .where('events_compacted_at', 'is', null)
      .where('completed_at', '<', cutoff)
      .limit(limit)
      .execute();
    if (!rows.length) return { runs: 0, events: 0 };
    const ids = rows.map((r) => r.id);
    const deleted = await trx
      .deleteFrom('run_events')
      .where('run_id', 'in', ids)
      .where('seq', '<', (eb) =>
        eb
          .selectFrom('run_events as last')
          .select((e) => e.fn.max('last.seq').as('seq'))
          .whereRef('last.run_id', '=', 'run_events.run_id'),
      )
      .executeTakeFirst();
    await trx.updateTable('runs').set({ events_compacted_at: at }).where('id', 'in', ids).execute();
    return { runs: ids.length, events: Number(deleted.numDeletedRows) };
  });
}

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [
    { table: 'runs', keys: ['id'] },
    { table: 'run_events', keys: ['run_id', 'seq'], tenantVia: { column: 'run_id', table: 'runs' } },
    { table: 'run_suspensions', keys: ['run_id'] },
  ]);
}
