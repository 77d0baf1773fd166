import { exportPages } from '../db/export-pages.js';
import { sql, type Kysely, type Selectable, type Updateable } from 'kysely';
import type { Database, SkillAssignmentTable, SkillFileTable, SkillTable } from '../db/schema.js';
import { countRows, type Page } from '../db/count.js';

/** SQL for skills, their files and their assignments; every statement is scoped by tenant. */

export type SkillRow = Selectable<SkillTable>;
export type SkillFileRow = Selectable<SkillFileTable>;
export type AssignmentRow = Selectable<SkillAssignmentTable>;
export type FileBrief = Pick<SkillFileRow, 'skill_id' | 'kind' | 'name' | 'language' | 'size'>;
type Executor = Kysely<Database>;

export interface SkillFilter {
  category?: string;
  /** active, archived, or undefined for both. */
  status?: string;
  source?: string;
  /** Words in the name or description. */
  q?: string;
}

function filtered(db: Executor, tenantId: string, filter: SkillFilter) {
  let q = db.selectFrom('skills').where('tenant_id', '=', tenantId);
  if (filter.category) q = q.where('category', '=', filter.category);
  if (filter.status) q = q.where('status', '=', filter.status);
  if (filter.source) q = q.where('source', '=', filter.source);
  if (filter.q) {
    const like = `%${filter.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where((eb) =>
      eb.or([eb(sql`lower(name)`, 'like', sql`${like} escape '\\'`), eb(sql`lower(description)`, 'like', sql`${like} escape '\\'`)]),
    );
  }
  return q;
}

export async function listSkills(db: Executor, { tenantId, filter, limit, offset }: { tenantId: string; filter: SkillFilter } & Page) {
  const q = filtered(db, tenantId, filter);
  const [rows, count] = await Promise.all([q.selectAll().orderBy('name').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total: count };
}

export async function listCategories(db: Executor, tenantId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('skills')
    .select('category')
    .distinct()
    .where('tenant_id', '=', tenantId)
    .where('status', '=', 'active')
    .where('category', 'is not', null)
    .orderBy('category')
    .execute();
  return rows.map((r) => r.category!);
}

export function findSkill(db: Executor, tenantId: string, id: string) {
  return db.selectFrom('skills').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export function findSkillByName(db: Executor, tenantId: string, name: string) {
  return db.selectFrom('skills').selectAll().where('tenant_id', '=', tenantId).where('name', '=', name).executeTakeFirst();
}

export function findSkillByStoreId(db: Executor, tenantId: string, storeId: string) {
  return db.selectFrom('skills').selectAll().where('tenant_id', '=', tenantId).where('store_id', '=', storeId).executeTakeFirst();
}

export async function acquiredStoreSkills(db: Executor, tenantId: string): Promise<Map<string, SkillRow>> {
  const rows = await db.selectFrom('skills').selectAll().where('tenant_id', '=', tenantId).where('store_id', 'is not', null).execute();
  return new Map(rows.map((r) => [r.store_id!, r]));
}

export function insertSkill(db: Executor, row: SkillRow) {
  return db.insertInto('skills').values(row).execute();
}

export function updateSkill(db: Executor, tenantId: string, id: string, patch: Updateable<SkillTable>) {
  return db.updateTable('skills').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

// ------------------------------------------------------------------ files

/** Names, kinds and sizes of the files of some skills (not their content), in their stored order. */
export async function fileBriefs(db: Executor, tenantId: string, skillIds: string[]): Promise<FileBrief[]> {
  if (!skillIds.length) return [];
  return db
    .selectFrom('skill_files')
    .select(['skill_id', 'kind', 'name', 'language', 'size'])
    .where('tenant_id', '=', tenantId)
    .where('skill_id', 'in', skillIds)
    .orderBy('skill_id')
    .orderBy('kind')
    .orderBy('position')
    .execute();
}

export function skillFiles(db: Executor, tenantId: string, skillId: string, kind?: string) {
  let q = db.selectFrom('skill_files').selectAll().where('tenant_id', '=', tenantId).where('skill_id', '=', skillId);
  if (kind) q = q.where('kind', '=', kind);
  return q.orderBy('kind').orderBy('position').execute();
}

/** A skill's files of one kind (`reference`, `script`). */
export interface FilesOfKind {
  tenantId: string;
  skillId: string;
  kind: string;
}

/** The skill's files of the kind become `files`, in their order. */
export async function replaceFiles(
  db: Executor,
  { tenantId, skillId, kind }: FilesOfKind,
  files: Omit<SkillFileRow, 'skill_id' | 'tenant_id' | 'kind' | 'position'>[],
) {
  await db.deleteFrom('skill_files').where('tenant_id', '=', tenantId).where('skill_id', '=', skillId).where('kind', '=', kind).execute();
  if (!files.length) return;
  await db
    .insertInto('skill_files')
    .values(files.map((f, position) => ({ ...f, skill_id: skillId, tenant_id: tenantId, kind, position })))
    .execute();
}

// ------------------------------------------------------------------ assignments

export function findAssignment(db: Executor, tenantId: string, skillId: string, agentId: string) {
  return db
    .selectFrom('skill_assignments')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('skill_id', '=', skillId)
    .where('agent_id', '=', agentId)
    .executeTakeFirst();
}

export function insertAssignment(db: Executor, row: AssignmentRow) {
  return db.insertInto('skill_assignments').values(row).execute();
}

/** One assignment: a skill of the tenant assigned to an agent. */
export interface AssignmentKey {
  tenantId: string;
  skillId: string;
  agentId: string;
}

export function updateAssignment(db: Executor, { tenantId, skillId, agentId }: AssignmentKey, patch: Updateable<SkillAssignmentTable>) {
  return db
    .updateTable('skill_assignments')
    .set(patch)
    .where('tenant_id', '=', tenantId)
    .where('skill_id', '=', skillId)
    .where('agent_id', '=', agentId)
    .executeTakeFirst();
}

export function deleteAssignment(db: Executor, tenantId: string, skillId: string, agentId: string) {
  return db
    .deleteFrom('skill_assignments')
    .where('tenant_id', '=', tenantId)
    .where('skill_id', '=', skillId)
    .where('agent_id', '=', agentId)
    .executeTakeFirst();
}

export function deleteAgentAssignments(db: Executor, tenantId: string, agentId: string) {
  return db.deleteFrom('skill_assignments').where('tenant_id', '=', tenantId).where('agent_id', '=', agentId).execute();
}

/** The assignments of a skill, highest priority first. */
export function skillAssignments(db: Executor, tenantId: string, skillId: string) {
  return db
    .selectFrom('skill_assignments')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('skill_id', '=', skillId)
    .orderBy('priority', 'desc')
    .orderBy('created_at')
    .execute();
}

/** The skills assigned to an agent with their assignments, highest priority first. */
export function agentAssignments(db: Executor, tenantId: string, agentId: string, opts: { usableOnly?: boolean } = {}) {
  let q = db
    .selectFrom('skill_assignments as a')
    .innerJoin('skills as s', (j) => j.onRef('s.id', '=', 'a.skill_id').onRef('s.tenant_id', '=', 'a.tenant_id'))
    .selectAll('s')
    .select([
      'a.agent_id',
      'a.enabled',
      'a.priority',
      'a.config',
      'a.assigned_by',
      'a.created_at as assigned_at',
      'a.updated_at as assignment_updated_at',
    ])
    .where('a.tenant_id', '=', tenantId)
    .where('a.agent_id', '=', agentId);
  if (opts.usableOnly) q = q.where('a.enabled', '=', 1).where('s.status', '=', 'active');
  return q.orderBy('a.priority', 'desc').orderBy('s.name').execute();
}

export type AgentAssignmentRow = Awaited<ReturnType<typeof agentAssignments>>[number];

/** An agent's assignments copied to another agent (its duplicate), made `at`. */
export interface AssignmentsCopy {
  fromAgentId: string;
  toAgentId: string;
  at: string;
}

/** Copies an agent's assignments to another agent (duplicate), inside the caller's transaction. */
export async function copyAssignments(db: Executor, tenantId: string, { fromAgentId, toAgentId, at }: AssignmentsCopy) {
  const rows = await db
    .selectFrom('skill_assignments')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('agent_id', '=', fromAgentId)
    .execute();
  if (!rows.length) return 0;
  await db
    .insertInto('skill_assignments')
    .values(rows.map((r) => ({ ...r, agent_id: toAgentId, created_at: at, updated_at: at })))
    .execute();
  return rows.length;
}

export { isUniqueViolation } from '../db/unique-violation.js';

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [
    { table: 'skills', keys: ['id'] },
    { table: 'skill_files', keys: ['skill_id', 'kind', 'name'] },
    { table: 'skill_assignments', keys: ['skill_id', 'agent_id'] },
    { table: 'connector_connections', keys: ['id'] },
    { table: 'connector_requests', keys: ['id'] },
  ]);
}
