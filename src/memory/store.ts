import { exportPages } from '../db/export-pages.js';
import { type Kysely, type Selectable, sql } from 'kysely';
import { countRows, type Page } from '../db/count.js';
import type { Database, MemoryBlockTable, MemoryBlockVersionTable } from '../db/schema.js';

/**
 * SQL for memory blocks and their versions; every statement names its tenant and agent. A block's
 * scope is its user: null for the agent's own (agent-wide) blocks, else that end user's.
 */

export type MemoryBlockRow = Selectable<MemoryBlockTable>;
export type MemoryVersionRow = Selectable<MemoryBlockVersionTable>;
type Executor = Kysely<Database>;

/** The blocks of one agent and scope (user null: agent-wide). */
export interface BlockScope {
  tenantId: string;
  agentId: string;
  userId: string | null;
}

/** `user_id = ?`, or `user_id is null` for the agent-wide scope (`= null` would match nothing). */
const scopeOp = (userId: string | null) => (userId === null ? 'is' : '=');

/** The blocks of one scope. */
function blocksOf(db: Executor, scope: BlockScope) {
  return db
    .selectFrom('memory_blocks')
    .where('tenant_id', '=', scope.tenantId)
    .where('agent_id', '=', scope.agentId)
    .where('user_id', scopeOp(scope.userId), scope.userId);
}

export function listBlocks(db: Executor, scope: BlockScope): Promise<MemoryBlockRow[]> {
  return blocksOf(db, scope).selectAll().orderBy('label').execute();
}

/** What a run of the agent sees: its agent-wide blocks, then the user's (when the run has one), each by label. */
export function blocksForRun(db: Executor, tenantId: string, agentId: string, userId: string | null): Promise<MemoryBlockRow[]> {
  return db
    .selectFrom('memory_blocks')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('agent_id', '=', agentId)
    .where((eb) => (userId === null ? eb('user_id', 'is', null) : eb.or([eb('user_id', 'is', null), eb('user_id', '=', userId)])))
    .orderBy('user_id', (o) => o.nullsFirst())
    .orderBy('label')
    .execute();
}

export function findBlock(db: Executor, scope: BlockScope, label: string): Promise<MemoryBlockRow | undefined> {
  return blocksOf(db, scope).selectAll().where('label', '=', label).executeTakeFirst();
}

/**
 * Makes the scope's block creations wait for each other until the transaction ends, so that each one
 * counts the blocks after the others committed: a PostgreSQL advisory lock on the scope. SQLite runs
 * one transaction at a time already.
 */
export async function lockScopeForCreate(db: Executor, scope: BlockScope, dialect: 'sqlite' | 'postgres'): Promise<void> {
  if (dialect !== 'postgres') return;
  const key = `memory-blocks/${scope.tenantId}/${scope.agentId}/${scope.userId ?? ''}`;
  await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(db);
}

export function countBlocks(db: Executor, scope: BlockScope): Promise<number> {
  return countRows(blocksOf(db, scope));
}

export async function insertBlock(db: Executor, row: MemoryBlockRow): Promise<void> {
  await db.insertInto('memory_blocks').values(row).execute();
}

/** A block as a writer read it: changed only if it is still at `version` (another writer may have been first). */
export interface BlockAtVersion {
  tenantId: string;
  id: string;
  version: number;
}

/** Writes the block's new text only if it is still at the version read: true when written. */
export async function updateBlock(
  db: Executor,
  { tenantId, id, version }: BlockAtVersion,
  patch: Pick<MemoryBlockRow, 'value' | 'version' | 'updated_at' | 'updated_by_type' | 'updated_by_id'>,
): Promise<boolean> {
  const result = await db
    .updateTable('memory_blocks')
    .set(patch)
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('version', '=', version)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** Deletes the block only if it is still at the version read: true when deleted. */
export async function deleteBlock(db: Executor, { tenantId, id, version }: BlockAtVersion): Promise<boolean> {
  const result = await db
    .deleteFrom('memory_blocks')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('version', '=', version)
    .executeTakeFirst();
  return result.numDeletedRows === 1n;
}

/** The versions of one label of one scope. */
function versionsOf(db: Executor, scope: BlockScope, label: string) {
  return db
    .selectFrom('memory_block_versions')
    .where('tenant_id', '=', scope.tenantId)
    .where('agent_id', '=', scope.agentId)
    .where('user_id', scopeOp(scope.userId), scope.userId)
    .where('label', '=', label);
}

/** The label's last version number in the scope, across deletes (0: none yet). */
export async function lastVersion(db: Executor, scope: BlockScope, label: string): Promise<number> {
  const row = await versionsOf(db, scope, label)
    .select((eb) => eb.fn.max('version').as('v'))
    .executeTakeFirst();
  return Number(row?.v ?? 0);
}

export async function insertVersion(db: Executor, row: MemoryVersionRow): Promise<void> {
  await db.insertInto('memory_block_versions').values(row).execute();
}

export async function listVersions(db: Executor, scope: BlockScope, label: string, { limit, offset }: Page) {
  const q = versionsOf(db, scope, label);
  const [rows, total] = await Promise.all([q.selectAll().orderBy('version', 'desc').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total };
}

/** Everything an agent remembered, for every user: the agent is being deleted. */
export async function deleteAgentMemory(db: Executor, tenantId: string, agentId: string): Promise<void> {
  await db.deleteFrom('memory_blocks').where('tenant_id', '=', tenantId).where('agent_id', '=', agentId).execute();
  await db.deleteFrom('memory_block_versions').where('tenant_id', '=', tenantId).where('agent_id', '=', agentId).execute();
}

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [
    { table: 'memory_blocks', keys: ['id'] },
    { table: 'memory_block_versions', keys: ['id'] },
  ]);
}
