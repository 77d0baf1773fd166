import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { newId, now } from '../ids.js';
import { auditDetailColumn } from './columns.js';
import type { Page } from '../db/count.js';
import type { Actor } from './permissions.js';
import * as store from './store.js';

export interface AuditInput {
  tenantId: string;
  actor: Actor;
  action: string;
  resourceType: string;
  resourceId?: string | null;
  detail?: Record<string, unknown>;
}

/** An event of one resource as a domain's audit helper takes it: the helper adds the tenant, the actor and the resource type. */
export interface ResourceEvent {
  action: string;
  resourceId: string;
  detail?: Record<string, unknown>;
}

type AuditRow = Database['audit_events'];

/** The row of an event happening now (its id and time are taken here, not when it is written). */
export function auditRow(event: AuditInput): AuditRow {
  return {
    id: newId(),
    tenant_id: event.tenantId,
    actor_type: event.actor.type,
    actor_id: event.actor.id,
    action: event.action,
    resource_type: event.resourceType,
    resource_id: event.resourceId ?? null,
    detail: JSON.stringify(event.detail ?? {}),
    created_at: now(),
  };
}

/** Writes one audit event; callers pass their transaction so the event commits with the change. */
export async function recordAudit(db: Kysely<Database>, event: AuditInput): Promise<void> {
  await store.insertAuditEvent(db, auditRow(event));
}

export async function listAudit(db: Kysely<Database>, tenantId: string, filter: store.AuditFilter, page: Page) {
  const { rows, total: count } = await store.listAuditEvents(db, tenantId, filter, page);
  return {
    events: rows.map((r) => ({
      id: r.id,
      actorType: r.actor_type,
      actorId: r.actor_id,
      action: r.action,
      resourceType: r.resource_type,
      resourceId: r.resource_id,
      detail: auditDetailColumn(r.detail),
      createdAt: r.created_at,
    })),
    total: count,
  };
}
