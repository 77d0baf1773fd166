import { SecretBox } from '../../identity/secret-box.js';
import type { Kysely } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import { Conflict, InvalidInput, NotFound } from '../../errors.js';
import { newId, now } from '../../ids.js';
import { type ResourceEvent, recordAudit } from '../../tenancy/audit.js';
import { connectionConfigurationColumn } from '../columns.js';
import type { Caller } from '../views.js';
import { isUniqueViolation } from '../store.js';
import { CONNECTORS, checkConfiguration, findConnector, maskConfiguration, type Connector } from './catalog.js';
import * as store from './store.js';
import type { ConnectionRow, RequestRow } from './store.js';

export const REQUEST_STATUSES = ['pending', 'accepted', 'rejected'] as const;
type RequestStatus = (typeof REQUEST_STATUSES)[number];

function requestView(r: RequestRow) {
  return {
    id: r.id,
    agentId: r.agent_id,
    connectorId: r.connector_id,
    reason: r.reason,
    status: r.status as RequestStatus,
    taskId: r.task_id,
    requestedBy: r.requested_by,
    decidedBy: r.decided_by,
    createdAt: r.created_at,
    decidedAt: r.decided_at,
  };
}

/**
 * Connectors: the integration catalog, each tenant's connections to it (configuration validated per
 * connector, secrets masked on the way out), and the connector requests agents make.
 */
export class ConnectorsService {
  private readonly box: SecretBox;
  private readonly db: Db;

  /** `masterKey` seals connections' configurations (identity/secret-box.ts). */
  constructor({ db, masterKey }: { db: Db; masterKey: Buffer }) {
    this.db = db;
    this.box = new SecretBox(masterKey, 'connector-configurations');
  }

  /** Connection configurations hold credentials: sealed at rest, the tenant and connector authenticated. */
  private sealConfiguration(tenantId: string, connectorId: string, configuration: Record<string, unknown>) {
    return this.box.seal(JSON.stringify(configuration), `${tenantId}/${connectorId}`);
  }

  private openConfiguration(row: { tenant_id: string; connector_id: string; configuration: string }): Record<string, unknown> {
    const plain = this.box.open(row.configuration, `${row.tenant_id}/${row.connector_id}`);
    if (plain === null) throw new Error(`the configuration of connector ${row.connector_id} cannot be opened with this master key`);
    return connectionConfigurationColumn(plain);
  }

  private requireConnector(id: string): Connector {
    const c = findConnector(id);
    if (!c) throw new NotFound('connector');
    return c;
  }

  view(connector: Connector, connection?: ConnectionRow) {
    return {
      id: connector.id,
      name: connector.name,
      category: connector.category,
      description: connector.description,
      fields: connector.fields.map((f) => ({
        name: f.name,
        label: f.label,
        type: f.type,
        required: f.required,
        secret: f.type === 'secret',
        description: f.description,
      })),
      suggestedSkills: connector.suggestedSkills,
      connected: Boolean(connection),
      connection: connection
        ? {
            id: connection.id,
            configuration: maskConfiguration(connector, this.openConfiguration(connection)),
            connectedBy: connection.connected_by,
            connectedAt: connection.created_at,
            updatedAt: connection.updated_at,
          }
        : null,
    };
  }

  /** The catalog with this tenant's connection state. */
  async list(tenantId: string, filter: { category?: string; connected?: boolean } = {}) {
    const byId = await this.connectionsById(tenantId);
    const connectors = CONNECTORS.filter((c) => !filter.category || c.category === filter.category)
      .filter((c) => filter.connected === undefined || byId.has(c.id) === filter.connected)
      .map((c) => this.view(c, byId.get(c.id)));
    return { connectors, total: connectors.length };
  }

  async get(tenantId: string, id: string) {
    const connector = this.requireConnector(id);
    return this.view(connector, await store.findConnection(this.db.kysely, tenantId, id));
  }

  async connect(caller: Caller, id: string, input: Record<string, unknown>) {
    const connector = this.requireConnector(id);
    const { configuration, errors } = checkConfiguration(connector, input);
    if (errors.length) throw new InvalidInput(`${errors[0].path} ${errors[0].message}`, errors);
    const at = now();
    const row: ConnectionRow = {
      id: newId(),
      tenant_id: caller.tenantId,
      connector_id: id,
      configuration: this.sealConfiguration(caller.tenantId, id, configuration),
      connected_by: caller.actor.id,
      created_at: at,
      updated_at: at,
    };
    const already = () =>
      new Conflict('already_connected', `${connector.name} is already connected; update the connection or disconnect it first`);
    try {
      await this.db.kysely.transaction().execute(async (trx) => {
        if (await store.findConnection(trx, caller.tenantId, id)) throw already();
        await store.insertConnection(trx, row);
        // Field names only: values (secrets) never reach the audit trail.
        await this.audit(trx, caller, { action: 'connector.connected', resourceId: id, detail: { fields: Object.keys(configuration) } });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw already();
      throw err;
    }
    return this.view(connector, row);
  }

  /** Changes some fields of a connection; fields left out keep their value, null removes an optional one. */
  async updateConnection(caller: Caller, id: string, input: Record<string, unknown>) {
    const connector = this.requireConnector(id);
    return this.db.kysely.transaction().execute(async (trx) => {
      const current = await store.findConnection(trx, caller.tenantId, id);
      if (!current) throw new NotFound('connection');
      const { configuration, errors } = checkConfiguration(connector, input, this.openConfiguration(current));
      if (errors.length) throw new InvalidInput(`${errors[0].path} ${errors[0].message}`, errors);
      const patch = { configuration: this.sealConfiguration(caller.tenantId, id, configuration), updated_at: now() };
      await store.updateConnection(trx, caller.tenantId, current.id, patch);
      await this.audit(trx, caller, { action: 'connector.updated', resourceId: id, detail: { fields: Object.keys(input) } });
      return this.view(connector, { ...current, ...patch });
    });
  }

  async disconnect(caller: Caller, id: string) {
    this.requireConnector(id);
    await this.db.kysely.transaction().execute(async (trx) => {
      const result = await store.deleteConnection(trx, caller.tenantId, id);
      if (!Number(result.numDeletedRows)) throw new NotFound('connection');
      await this.audit(trx, caller, { action: 'connector.disconnected', resourceId: id });
    });
  }

  /** This tenant's connections, by connector id. */
  async connectionsById(tenantId: string): Promise<Map<string, ConnectionRow>> {
    const rows = await store.listConnections(this.db.kysely, tenantId);
    return new Map(rows.map((c) => [c.connector_id, c]));
  }

  // ---------------------------------------------------------------- requests (connector_request)

  /** Records an agent's request for an integration, pending an administrator's decision. */
  async createRequest(caller: Caller, input: { id: string; agentId: string; connectorId: string; reason: string; taskId: string | null }) {
    const row: RequestRow = {
      id: input.id,
      tenant_id: caller.tenantId,
      agent_id: input.agentId,
      connector_id: input.connectorId,
      reason: input.reason,
      status: 'pending',
      task_id: input.taskId,
      requested_by: caller.actor.id,
      decided_by: null,
      created_at: now(),
      decided_at: null,
    };
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.insertRequest(trx, row);
      await recordAudit(trx, {
        tenantId: caller.tenantId,
        actor: caller.actor,
        action: 'connector.requested',
        resourceType: 'connector_request',
        resourceId: row.id,
        detail: { connectorId: row.connector_id, agentId: row.agent_id, taskId: row.task_id },
      });
    });
    return requestView(row);
  }

  /** Accepts or rejects a pending request (what approving or rejecting its task does); idempotent. */
  async decideRequest(caller: Caller, requestId: string, status: 'accepted' | 'rejected') {
    return this.db.kysely.transaction().execute(async (trx) => {
      const row = await store.findRequest(trx, caller.tenantId, requestId);
      if (!row) throw new NotFound('connector request');
      if (row.status !== 'pending') return requestView(row);
      const patch = { status, decided_by: caller.actor.id, decided_at: now() };
      await store.updateRequest(trx, caller.tenantId, requestId, patch);
      await recordAudit(trx, {
        tenantId: caller.tenantId,
        actor: caller.actor,
        action: `connector.request_${status}`,
        resourceType: 'connector_request',
        resourceId: requestId,
        detail: { connectorId: row.connector_id, agentId: row.agent_id },
      });
      return requestView({ ...row, ...patch });
    });
  }

  /** Requests, newest first. */
  async listRequests(tenantId: string, filter: store.RequestFilter, page: number, limit: number) {
    const { rows, total } = await store.listRequests(this.db.kysely, tenantId, filter, { limit, offset: (page - 1) * limit });
    return { requests: rows.map(requestView), total, page, limit };
  }

  /** The latest request of an agent per connector. */
  async latestRequests(tenantId: string, agentId: string): Promise<Map<string, ReturnType<typeof requestView>>> {
    const rows = await store.requestsOfAgent(this.db.kysely, tenantId, agentId);
    return new Map(rows.map((r) => [r.connector_id, requestView(r)]));
  }

  /** An event of a connector (its id the resource's). */
  private audit(trx: Kysely<Database>, caller: Caller, event: ResourceEvent) {
    return recordAudit(trx, { tenantId: caller.tenantId, actor: caller.actor, resourceType: 'connector', ...event });
  }
}
