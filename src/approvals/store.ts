import { exportPages } from '../db/export-pages.js';
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import { countRows } from '../db/count.js';
import type { Database, ToolApprovalTable } from '../db/schema.js';

/** SQL for tool calls awaiting approval: the only module that names the `tool_approvals` table. */

export type ToolApprovalRow = Selectable<ToolApprovalTable>;
type Executor = Kysely<Database>;

export interface ApprovalFilter {
  status?: string;
  agentId?: string;
  runId?: string;
}

export function insertApprovals(db: Executor, rows: Insertable<ToolApprovalTable>[]) {
  return db.insertInto('tool_approvals').values(rows).execute();
}

export function findApproval(db: Executor, tenantId: string, id: string) {
  return db.selectFrom('tool_approvals').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

/** A page of the tenant's tool approvals, newest first, and how many match. */
export async function listApprovals(db: Executor, p: { tenantId: string; filter: ApprovalFilter; limit: number; offset: number }) {
  let q = db.selectFrom('tool_approvals').where('tenant_id', '=', p.tenantId);
  if (p.filter.status) q = q.where('status', '=', p.filter.status);
  if (p.filter.agentId) q = q.where('agent_id', '=', p.filter.agentId);
  if (p.filter.runId) q = q.where('run_id', '=', p.filter.runId);
  const [rows, total] = await Promise.all([q.selectAll().orderBy('id', 'desc').limit(p.limit).offset(p.offset).execute(), countRows(q)]);
  return { rows, total };
}

/**
 * Records a decision on a pending approval; false when it was decided (or ended) meanwhile, or, with
 * `unexpiredAt` (a person's decision), when it expired by then.
 */
export async function decide(
  db: Executor,
  id: string,
  when: { unexpiredAt?: string },
  patch: Updateable<ToolApprovalTable> & { status: string },
) {
  let q = db.updateTable('tool_approvals').set(patch).where('id', '=', id).where('status', '=', 'pending');
  if (when.unexpiredAt !== undefined) q = q.where('expires_at', '>', when.unexpiredAt);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** The run's approvals not yet taken in by it (the calls of its current pause). */
export function untakenOfRun(db: Executor, runId: string) {
  return db.selectFrom('tool_approvals').selectAll().where('run_id', '=', runId).where('resumed_at', 'is', null).execute();
}

export function markTaken(db: Executor, ids: string[], at: string) {
  return db.updateTable('tool_approvals').set({ resumed_at: at }).where('id', 'in', ids).execute();
}

/** Tool calls waiting for a decision, across tenants (the metrics' gauge). */
export function countPending(db: Executor): Promise<number> {
  return countRows(db.selectFrom('tool_approvals').where('status', '=', 'pending'));
}

/** Pending approvals whose time is up, oldest first. */
export function expired(db: Executor, now: string, limit: number) {
  return db
    .selectFrom('tool_approvals')
    .selectAll()
    .where('status', '=', 'pending')
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .execute();
}

/**
 * Runs whose every approval is decided and not yet taken in: resumable, though no process did (the
 * deciding one stopped, or was shutting down).
 */
export async function decidedRuns(db: Executor, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('tool_approvals as a')
    .select('a.run_id')
    .distinct()
    .where('a.resumed_at', 'is', null)
    .where('a.status', 'in', ['approved', 'rejected', 'expired'])
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('tool_approvals as p').select('p.id').whereRef('p.run_id', '=', 'a.run_id').where('p.status', '=', 'pending'))),
    )
    .limit(limit)
    .execute();
  return rows.map((r) => r.run_id);
}

/** The run ended while its calls waited: they will never be decided. */
export function cancelOfRun(db: Executor, runId: string, at: string) {
  return db
    .updateTable('tool_approvals')
    .set({ status: 'cancelled', decided_at: at, resumed_at: at })
    .where('run_id', '=', runId)
    .where('resumed_at', 'is', null)
    .where('status', '=', 'pending')
    .execute();
}

/** Decided approvals of a run that ended before taking them in are closed too, so no sweep looks at them again. */
export function closeUntaken(db: Executor, runId: string, at: string) {
  return db.updateTable('tool_approvals').set({ resumed_at: at }).where('run_id', '=', runId).where('resumed_at', 'is', null).execute();
}

/** Retention: the approvals of runs being deleted, in the transaction that deletes them. */
export async function deleteOfRuns(db: Executor, runIds: string[]) {
  await db.deleteFrom('tool_approvals').where('run_id', 'in', runIds).execute();
}

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [{ table: 'tool_approvals', keys: ['id'] }]);
}
