import { exportPages } from '../db/export-pages.js';
import { type Kysely, type Selectable, type Updateable, sql } from 'kysely';
import type { AgentTable, Database } from '../db/schema.js';
import { countRows, type Page } from '../db/count.js';

/** SQL for agents; every statement is scoped by tenant. */

export type AgentRow = Selectable<AgentTable>;
type Executor = Kysely<Database>;

export interface AgentFilter {
  appId?: string;
  teamId?: string;
  status?: string;
  /** Name contains this, case-insensitively (ASCII on SQLite, whose lower() folds only ASCII). */
  q?: string;
}

/** LIKE's wildcards and its escape character taken literally. */
function likeLiteral(text: string) {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

export async function listAgents(db: Executor, { tenantId, filter, limit, offset }: { tenantId: string; filter: AgentFilter } & Page) {
  let q = db.selectFrom('agents').where('tenant_id', '=', tenantId);
  if (filter.appId) q = q.where('app_id', '=', filter.appId);
  if (filter.teamId) q = q.where('team_id', '=', filter.teamId);
  if (filter.status) q = q.where('status', '=', filter.status);
  if (filter.q) q = q.where(sql<boolean>`lower(name) like ${`%${likeLiteral(filter.q.toLowerCase())}%`} escape '\\'`);
  const [rows, count] = await Promise.all([
    q
      .select(['id', 'name', 'role', 'description', 'model', 'status', 'hosting', 'team_id', 'app_id', 'created_at'])
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .execute(),
    countRows(q),
  ]);
  return { rows, total: count };
}

export function findAgent(db: Executor, tenantId: string, id: string) {
  return db.selectFrom('agents').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

/** The columns identity documents need. Public documents name an agent by id alone: its tenant comes from the row. */
export function findAgentIdentityAnyTenant(db: Executor, id: string) {
  return db
    .selectFrom('agents')
    .select(['id', 'tenant_id', 'name', 'status', 'hosting', 'tools', 'updated_at'])
    .where('id', '=', id)
    .executeTakeFirst();
}

export function findAgentBudget(db: Executor, tenantId: string, id: string) {
  return db
    .selectFrom('agents')
    .select(['id', 'monthly_budget_usd'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export function setAgentBudget(db: Executor, tenantId: string, id: string, budget: number | null) {
  return db
    .updateTable('agents')
    .set({ monthly_budget_usd: budget })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function existingAgentIds(db: Executor, tenantId: string, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await db.selectFrom('agents').select('id').where('tenant_id', '=', tenantId).where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

export function insertAgent(db: Executor, row: AgentRow) {
  return db.insertInto('agents').values(row).execute();
}

export function updateAgent(db: Executor, tenantId: string, id: string, patch: Updateable<AgentTable>) {
  return db.updateTable('agents').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

/** A change of an agent's status from one to another, at a time. */
export interface StatusTransition {
  from: string;
  to: string;
  at: string;
}

/** Compare-and-set on status, so concurrent pause/resume calls cannot both win. */
export function transitionAgent(db: Executor, tenantId: string, id: string, { from, to, at }: StatusTransition) {
  return db
    .updateTable('agents')
    .set({ status: to, updated_at: at })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('status', '=', from)
    .executeTakeFirst();
}

export function deleteAgent(db: Executor, tenantId: string, id: string) {
  return db.deleteFrom('agents').where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export async function listApps(db: Executor, tenantId: string) {
  const rows = await db
    .selectFrom('agents')
    .select(['app_id', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .groupBy('app_id')
    .orderBy('app_id')
    .execute();
  return rows.map((r) => ({ id: r.app_id, agentCount: Number(r.n) }));
}

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [{ table: 'agents', keys: ['id'] }]);
}
