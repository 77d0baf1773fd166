import type { Kysely, Selectable, Updateable } from 'kysely';
import { countRows } from '../../db/count.js';
import type { ConnectorConnectionTable, ConnectorRequestTable, Database } from '../../db/schema.js';

/** SQL of connectors: tenants' connections and agents' connector requests. Every query names its tenant. */

type Executor = Kysely<Database>;
export type ConnectionRow = Selectable<ConnectorConnectionTable>;
export type RequestRow = Selectable<ConnectorRequestTable>;

export function findConnection(db: Executor, tenantId: string, connectorId: string) {
  return db
    .selectFrom('connector_connections')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('connector_id', '=', connectorId)
    .executeTakeFirst();
}

export function listConnections(db: Executor, tenantId: string) {
  return db.selectFrom('connector_connections').selectAll().where('tenant_id', '=', tenantId).execute();
}

export function insertConnection(db: Executor, row: ConnectionRow) {
  return db.insertInto('connector_connections').values(row).execute();
}

export function updateConnection(db: Executor, tenantId: string, id: string, patch: Updateable<ConnectorConnectionTable>) {
  return db.updateTable('connector_connections').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
}

export function deleteConnection(db: Executor, tenantId: string, connectorId: string) {
  return db
    .deleteFrom('connector_connections')
    .where('tenant_id', '=', tenantId)
    .where('connector_id', '=', connectorId)
    .executeTakeFirst();
}

export function insertRequest(db: Executor, row: RequestRow) {
  return db.insertInto('connector_requests').values(row).execute();
}

export function findRequest(db: Executor, tenantId: string, id: string) {
  return db.selectFrom('connector_requests').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export function updateRequest(db: Executor, tenantId: string, id: string, patch: Updateable<ConnectorRequestTable>) {
  return db.updateTable('connector_requests').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
}

export interface RequestFilter {
  status?: string;
  agentId?: string;
  connectorId?: string;
}

/** A page of requests, newest first, and the count of all that match. */
export async function listRequests(db: Executor, tenantId: string, filter: RequestFilter, page: { limit: number; offset: number }) {
  let q = db.selectFrom('connector_requests').where('tenant_id', '=', tenantId);
  if (filter.status) q = q.where('status', '=', filter.status);
  if (filter.agentId) q = q.where('agent_id', '=', filter.agentId);
  if (filter.connectorId) q = q.where('connector_id', '=', filter.connectorId);
  const [rows, total] = await Promise.all([
    q.selectAll().orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
    countRows(q),
  ]);
  return { rows, total };
}

/** An agent's requests, oldest first. */
export function requestsOfAgent(db: Executor, tenantId: string, agentId: string) {
  return db
    .selectFrom('connector_requests')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('agent_id', '=', agentId)
    .orderBy('id')
    .execute();
}

/** The newest sealed connector configuration, if any: what the master key check tries to open at start. */
export function newestConnection(db: Executor) {
  return db
    .selectFrom('connector_connections')
    .select(['tenant_id', 'connector_id', 'configuration'])
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}
