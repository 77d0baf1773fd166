import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { newId, now } from '../ids.js';
import type { Actor } from './permissions.js';
import { countRows } from '../db/count.js';

export interface AuditInput {
  tenantId: string;
  actor: Actor;
  action: string;
  resourceType: string;
  resourceId?: string | null;
  detail?: Record<string, unknown>;
}

export type AuditRow = Database['audit_events'];

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
  await db.insertInto('audit_events').values(auditRow(event)).execute();
}

export interface AuditFilter {
  action?: string;
  resourceType?: string;
  resourceId?: string;
  actorId?: string;
  since?: string;
  until?: string;
}

export async function listAudit(db: Kysely<Database>, tenantId: string, filter: AuditFilter, limit: number, offset: number) {
  let q = db.selectFrom('audit_events').where('tenant_id', '=', tenantId);
  if (filter.action) q = q.where('action', '=', filter.action);
  if (filter.resourceType) q = q.where('resource_type', '=', filter.resourceType);
  if (filter.resourceId) q = q.where('resource_id', '=', filter.resourceId);
  if (filter.actorId) q = q.where('actor_id', '=', filter.actorId);
  if (filter.since) q = q.where('created_at', '>=', filter.since);
  if (filter.until) q = q.where('created_at', '<', filter.until);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    countRows(q),
  ]);
  return {
    events: rows.map((r) => ({
      id: r.id,
      actorType: r.actor_type,
      actorId: r.actor_id,
      action: r.action,
      resourceType: r.resource_type,
      resourceId: r.resource_id,
      detail: JSON.parse(r.detail) as Record<string, unknown>,
      createdAt: r.created_at,
    })),
    total: count,
  };
}
