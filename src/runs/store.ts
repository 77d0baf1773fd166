import { type Kysely, type Selectable, type Updateable, sql } from 'kysely';
import type { Database, RunTable } from '../db/schema.js';
import { countRows } from '../db/count.js';
import { insertRows, placeholders, runPrepared } from '../db/prepared.js';

/** SQL for runs and their event log. */

export type RunRow = Selectable<RunTable>;
type Executor = Kysely<Database>;

export const ACTIVE_STATUSES = ['queued', 'running'] as const;

export function findRun(db: Executor, tenantId: string, id: string) {
  return db.selectFrom('runs').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export function findRunById(db: Executor, id: string) {
  return db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listAgentRuns(db: Executor, tenantId: string, agentId: string, limit: number, offset: number) {
  const q = db.selectFrom('runs').where('tenant_id', '=', tenantId).where('agent_id', '=', agentId);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    countRows(q),
  ]);
  return { rows, total: count };
}

export async function listTaskRuns(db: Executor, tenantId: string, taskId: string, limit: number, offset: number, status?: string) {
  let q = db.selectFrom('runs').where('tenant_id', '=', tenantId).where('task_id', '=', taskId);
  if (status) q = q.where('status', '=', status);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    countRows(q),
  ]);
  return { rows, total: count };
}

/** Moves a run to a terminal state only if it is still active: exactly one terminal write wins. */
export async function finishRun(db: Executor, id: string, patch: Updateable<RunTable>) {
  const r = await runPrepared(
    db,
    `finish run ${Object.keys(patch).join(',')}`,
    (q, p) => q.updateTable('runs').set(placeholders(patch, p)).where('id', '=', p('$id')).where('status', 'in', [...ACTIVE_STATUSES]),
    { ...patch, $id: id },
  );
  return { numUpdatedRows: r.numAffectedRows ?? 0n };
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
      (q, p) => q.updateTable('runs').set({ lease_expires_at: p('until') }).where('id', '=', p('id')).where('lease_owner', '=', p('owner')).where('status', '=', 'running'),
      { id, owner, until },
    );
  }
}

/** Running runs whose lease expired before `now`: those whose process stopped renewing it. */
export function expiredRunsQuery(db: Executor, now: string, limit: number) {
  return (
    db
      .selectFrom('runs')
      .select(['id', 'tenant_id', 'conversation_id', 'started_at', 'created_at', 'task_id'])
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

/** Events in as few INSERTs as keep the statement texts few (db/prepared.ts insertRows). */
export function insertEvents(db: Executor, rows: { run_id: string; seq: number; event: string; data: string }[]) {
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
