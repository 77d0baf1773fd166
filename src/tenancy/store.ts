import { exportPages } from '../db/export-pages.js';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import { countRows } from '../db/count.js';
import { insertRows } from '../db/prepared.js';

/** SQL for tenants and API keys. Every key query names its tenant. */

export type Executor = Kysely<Database>;

export function insertTenant(db: Executor, row: Database['tenants']) {
  return db.insertInto('tenants').values(row).execute();
}

export function findTenant(db: Executor, id: string) {
  return db.selectFrom('tenants').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listTenants(db: Executor) {
  return db.selectFrom('tenants').selectAll().orderBy('id').execute();
}

/** The settings of a tenant, row-locked until the transaction ends where the dialect can (PostgreSQL). */
export function findTenantSettingsForUpdate(db: Executor, id: string, lock: boolean) {
  const q = db.selectFrom('tenants').select('settings').where('id', '=', id);
  return (lock ? q.forUpdate() : q).executeTakeFirst();
}

export function updateTenantSettings(db: Executor, id: string, settings: string) {
  return db.updateTable('tenants').set({ settings }).where('id', '=', id).execute();
}

export function insertApiKey(db: Executor, row: Database['api_keys']) {
  return db.insertInto('api_keys').values(row).execute();
}

/** Lookup for authentication: by id alone, since the tenant is not known before the key is. */
export function findApiKeyForAuth(db: Executor, id: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'tenant_id', 'secret_hash', 'permissions', 'revoked_at', 'rate_limit_per_minute'])
    .where('id', '=', id)
    .executeTakeFirst();
}

export function findApiKey(db: Executor, tenantId: string, id: string) {
  return db.selectFrom('api_keys').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export async function listApiKeys(db: Executor, tenantId: string, opts: { limit: number; offset: number; includeRevoked: boolean }) {
  let q = db.selectFrom('api_keys').where('tenant_id', '=', tenantId);
  if (!opts.includeRevoked) q = q.where('revoked_at', 'is', null);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('id', 'desc').limit(opts.limit).offset(opts.offset).execute(),
    countRows(q),
  ]);
  return { rows, total: count };
}

/** The permissions of the tenant's keys not revoked. */
export function listActiveKeyPermissions(db: Executor, tenantId: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'permissions'])
    .where('tenant_id', '=', tenantId)
    .where('revoked_at', 'is', null)
    .execute();
}

export function revokeApiKey(db: Executor, tenantId: string, id: string, at: string) {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export function setApiKeyRateLimit(db: Executor, tenantId: string, id: string, limit: number | null) {
  return db
    .updateTable('api_keys')
    .set({ rate_limit_per_minute: limit })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * The lock run admissions take first: the tenant's row on PostgreSQL; on SQLite the database's write
 * lock (an UPDATE that matches nothing takes it and writes nothing), waited for by the busy handler.
 */
export async function lockForAdmission(db: Executor, tenantId: string, dialect: 'sqlite' | 'postgres'): Promise<void> {
  if (dialect === 'postgres') await db.selectFrom('tenants').select('id').where('id', '=', tenantId).forUpdate().execute();
  else await sql`update tenants set settings = settings where 0`.execute(db);
}

// ---- audit events ----

export function insertAuditEvent(db: Executor, row: Database['audit_events']) {
  return db.insertInto('audit_events').values(row).execute();
}

/** A batch of audit events (tenancy/audit-buffer.ts), in as few multi-row INSERTs as keep the statement texts few. */
export function insertAuditEvents(db: Executor, rows: Database['audit_events'][]) {
  return insertRows(db, 'audit_events', rows);
}

export interface AuditFilter {
  action?: string;
  resourceType?: string;
  resourceId?: string;
  actorId?: string;
  since?: string;
  until?: string;
}

/** A page of the tenant's audit events, newest first, and the count of all that match. */
export async function listAuditEvents(db: Executor, tenantId: string, filter: AuditFilter, page: { limit: number; offset: number }) {
  let q = db.selectFrom('audit_events').where('tenant_id', '=', tenantId);
  if (filter.action) q = q.where('action', '=', filter.action);
  if (filter.resourceType) q = q.where('resource_type', '=', filter.resourceType);
  if (filter.resourceId) q = q.where('resource_id', '=', filter.resourceId);
  if (filter.actorId) q = q.where('actor_id', '=', filter.actorId);
  if (filter.since) q = q.where('created_at', '>=', filter.since);
  if (filter.until) q = q.where('created_at', '<', filter.until);
  const [rows, total] = await Promise.all([
    q.selectAll().orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    countRows(q),
  ]);
  return { rows, total };
}

/** Retention: up to `limit` audit events of the tenant recorded before `cutoff`, deleted; how many. */
export async function deleteAuditEventsBefore(db: Executor, tenantId: string, cutoff: string, limit: number): Promise<number> {
  const r = await db
    .deleteFrom('audit_events')
    .where('id', 'in', (eb) =>
      eb.selectFrom('audit_events').select('id').where('tenant_id', '=', tenantId).where('created_at', '<', cutoff).limit(limit),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [
    { table: 'tenants', keys: ['id'], tenantColumn: 'id' },
    // Never the key's hash.
    {
      table: 'api_keys',
      keys: ['id'],
      columns: ['id', 'tenant_id', 'name', 'permissions', 'created_by', 'created_at', 'revoked_at', 'rate_limit_per_minute'],
    },
    { table: 'audit_events', keys: ['id'] },
  ]);
}
