import { exportPages } from '../db/export-pages.js';
import type { Kysely, Selectable, Updateable } from 'kysely';
import type { Database, IdentityAgentKeyTable, IdentityPlatformKeyTable, IdentityTokenTable, TbacPolicyTable } from '../db/schema.js';
import { countRows, type Page } from '../db/count.js';
import type { ToolRequest } from './tbac.js';

/**
 * SQL of the identity domain. Every query on tenant data names the tenant, except the few lookups
 * that find the tenant in the first place (public documents by agent id, a token by its jti); those
 * say so in their name.
 */

export type Executor = Kysely<Database>;
export type PlatformKeyRow = Selectable<IdentityPlatformKeyTable>;
export type AgentKeyRow = Selectable<IdentityAgentKeyTable>;
export type TokenRow = Selectable<IdentityTokenTable>;
export type PolicyRow = Selectable<TbacPolicyTable>;

export { isUniqueViolation } from '../db/unique-violation.js';

// ---- platform keys (not tenant data) ----

export function listPlatformKeys(db: Executor): Promise<PlatformKeyRow[]> {
  return db.selectFrom('identity_platform_keys').selectAll().orderBy('generation', 'asc').execute();
}

/** Inserts a key unless its generation exists already (another process won); true when inserted. */
export async function insertPlatformKeyIfAbsent(db: Executor, row: PlatformKeyRow): Promise<boolean> {
  const result = await db
    .insertInto('identity_platform_keys')
    .values(row)
    .onConflict((oc) => oc.column('generation').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Keys still signing (or due to) stop at `at`, when the newer key takes over. */
export function retirePlatformKeys(db: Executor, belowGeneration: number, at: string) {
  return db
    .updateTable('identity_platform_keys')
    .set({ retires_at: at })
    .where('generation', '<', belowGeneration)
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('retires_at', 'is', null), eb('retires_at', '>', at)]))
    .execute();
}

export function revokePlatformKey(db: Executor, kid: string, at: string) {
  return db
    .updateTable('identity_platform_keys')
    .set({ revoked_at: at })
    .where('kid', '=', kid)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

/** A revoked successor never takes over: keys it would have retired (and have not yet) sign on. */
export function unretirePlatformKeys(db: Executor, retiresAt: string, now: string) {
  return db
    .updateTable('identity_platform_keys')
    .set({ retires_at: null })
    .where('retires_at', '=', retiresAt)
    .where('retires_at', '>', now)
    .where('revoked_at', 'is', null)
    .execute();
}

// ---- agent keys ----

/** The newest sealed private key of each keyring, if any: what the master key check tries to open at start. */
export async function newestSealedKeys(
  db: Executor,
): Promise<{ platform?: { kid: string; sealed: string }; agent?: { kid: string; sealed: string } }> {
  const platform = await db
    .selectFrom('identity_platform_keys')
    .select(['kid', 'private_jwk as sealed'])
    .where('revoked_at', 'is', null)
    .orderBy('generation', 'desc')
    .limit(1)
    .executeTakeFirst();
  const agent = await db
    .selectFrom('identity_agent_keys')
    .select(['kid', 'private_jwk as sealed'])
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return { platform, agent };
}

/** Platform keys marked revoked as of `at` (MASTER_KEY_RESET: the keys no longer open). */
export function revokePlatformKeys(db: Executor, kids: string[], at: string) {
  return db
    .updateTable('identity_platform_keys')
    .set({ revoked_at: at })
    .where('kid', 'in', kids)
    .where('revoked_at', 'is', null)
    .execute();
}

export function listAgentKeys(db: Executor, tenantId: string, agentId: string): Promise<AgentKeyRow[]> {
  return db
    .selectFrom('identity_agent_keys')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('agent_id', '=', agentId)
    .orderBy('generation', 'desc')
    .execute();
}

export function findAgentKey(db: Executor, tenantId: string, agentId: string, kid: string): Promise<AgentKeyRow | undefined> {
  return db
    .selectFrom('identity_agent_keys')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('agent_id', '=', agentId)
    .where('kid', '=', kid)
    .executeTakeFirst();
}

export async function insertAgentKeyIfAbsent(db: Executor, row: AgentKeyRow): Promise<boolean> {
  const result = await db
    .insertInto('identity_agent_keys')
    .values(row)
    .onConflict((oc) => oc.columns(['agent_id', 'generation']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export function insertAgentKey(db: Executor, row: AgentKeyRow) {
  return db.insertInto('identity_agent_keys').values(row).execute();
}

/** The agent's active keys rotated `at`: still accepted until `expiresAt`. */
export interface KeyRotation {
  at: string;
  expiresAt: string;
}

export function rotateAgentKeys(db: Executor, tenantId: string, agentId: string, { at, expiresAt }: KeyRotation) {
  return db
    .updateTable('identity_agent_keys')
    .set({ status: 'rotated', rotated_at: at, expires_at: expiresAt })
    .where('tenant_id', '=', tenantId)
    .where('agent_id', '=', agentId)
    .where('status', '=', 'active')
    .execute();
}

export function updateAgentKey(db: Executor, tenantId: string, kid: string, patch: Updateable<IdentityAgentKeyTable>) {
  return db.updateTable('identity_agent_keys').set(patch).where('tenant_id', '=', tenantId).where('kid', '=', kid).executeTakeFirst();
}

// ---- issued tokens ----

export function insertToken(db: Executor, row: TokenRow) {
  return db.insertInto('identity_tokens').values(row).execute();
}

export interface TokenRecord {
  tenant_id: string;
  kind: string;
  revoked_at: string | null;
  agent_key_id: string | null;
  api_key_id: string | null;
  /** Revocation state of the agent key the token derives from (its API key's is tenancy's: access-token.ts). */
  agent_key_status: string | null;
}

/** A token and the state of the agent key it derives from, by jti (the tenant is checked by the caller). */
export function findTokenStateByJti(db: Executor, jti: string): Promise<TokenRecord | undefined> {
  return db
    .selectFrom('identity_tokens as t')
    .leftJoin('identity_agent_keys as g', 'g.kid', 't.agent_key_id')
    .select(['t.tenant_id', 't.kind', 't.revoked_at', 't.agent_key_id', 't.api_key_id', 'g.status as agent_key_status'])
    .where('t.jti', '=', jti)
    .executeTakeFirst();
}

/** Client assertions are remembered until they expire, so each is accepted once. */
export async function insertAssertionIfAbsent(db: Executor, row: TokenRow): Promise<boolean> {
  const result = await db
    .insertInto('identity_tokens')
    .values(row)
    .onConflict((oc) => oc.column('jti').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function activeTokensOfAgentKey(db: Executor, tenantId: string, kid: string): Promise<string[]> {
  const rows = await db
    .selectFrom('identity_tokens')
    .select('jti')
    .where('tenant_id', '=', tenantId)
    .where('agent_key_id', '=', kid)
    .where('revoked_at', 'is', null)
    .execute();
  return rows.map((r) => r.jti);
}

/** Tokens issued to the agent (its SVIDs, API tokens, the delegations it acts in), not revoked yet. */
export async function activeTokensOfAgent(db: Executor, tenantId: string, agentId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('identity_tokens')
    .select('jti')
    .where('tenant_id', '=', tenantId)
    .where('agent_id', '=', agentId)
    .where('revoked_at', 'is', null)
    .execute();
  return rows.map((r) => r.jti);
}

/** Every key of the agent, at once (the agent is deleted). */
export function revokeAgentKeys(db: Executor, tenantId: string, agentId: string, at: string) {
  return db
    .updateTable('identity_agent_keys')
    .set({ status: 'revoked', revoked_at: at })
    .where('tenant_id', '=', tenantId)
    .where('agent_id', '=', agentId)
    .where('status', '!=', 'revoked')
    .execute();
}

const chunks = <T>(items: T[], size = 500): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

export async function revokeTokens(db: Executor, tenantId: string, jtis: string[], at: string) {
  for (const chunk of chunks(jtis)) {
    await db.updateTable('identity_tokens').set({ revoked_at: at }).where('tenant_id', '=', tenantId).where('jti', 'in', chunk).execute();
  }
}

/** Tokens exchanged from any of `parents` and not revoked yet. */
export async function activeChildTokens(db: Executor, tenantId: string, parents: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const chunk of chunks(parents)) {
    const rows = await db
      .selectFrom('identity_tokens')
      .select('jti')
      .where('tenant_id', '=', tenantId)
      .where('parent_jti', 'in', chunk)
      .where('revoked_at', 'is', null)
      .execute();
    out.push(...rows.map((r) => r.jti));
  }
  return out;
}

export function pruneTokens(db: Executor, expiredBefore: string) {
  return db.deleteFrom('identity_tokens').where('expires_at', '<', expiredBefore).execute();
}

// ---- TBAC policies ----

export interface PolicyFilter {
  callerAgentId?: string;
  calleeAgentId?: string;
  toolName?: string;
}

export async function listPolicies(db: Executor, { tenantId, filter, limit, offset }: { tenantId: string; filter: PolicyFilter } & Page) {
  let q = db.selectFrom('tbac_policies').where('tenant_id', '=', tenantId);
  if (filter.callerAgentId) q = q.where('caller_agent_id', '=', filter.callerAgentId);
  if (filter.calleeAgentId) q = q.where('callee_agent_id', '=', filter.calleeAgentId);
  if (filter.toolName) q = q.where('tool_name', '=', filter.toolName);
  const [rows, count] = await Promise.all([q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total: count };
}

/** Every policy that can match the request: each field exact or `*`. At most 8 rows. */
export function candidatePolicies(db: Executor, tenantId: string, { caller, callee, tool }: ToolRequest): Promise<PolicyRow[]> {
  return db
    .selectFrom('tbac_policies')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('caller_agent_id', 'in', [caller, '*'])
    .where('callee_agent_id', 'in', [callee, '*'])
    .where('tool_name', 'in', [tool, '*'])
    .execute();
}

export function findPolicy(db: Executor, tenantId: string, id: string) {
  return db.selectFrom('tbac_policies').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export function insertPolicy(db: Executor, row: PolicyRow) {
  return db.insertInto('tbac_policies').values(row).execute();
}

export function updatePolicy(db: Executor, tenantId: string, id: string, patch: Updateable<TbacPolicyTable>) {
  return db.updateTable('tbac_policies').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export function deletePolicy(db: Executor, tenantId: string, id: string) {
  return db.deleteFrom('tbac_policies').where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [
    { table: 'identity_agent_keys', keys: ['kid'] },
    { table: 'identity_tokens', keys: ['jti'] },
    { table: 'tbac_policies', keys: ['id'] },
  ]);
}
