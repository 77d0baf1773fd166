import { type Static, Type } from 'typebox';
import type { Db } from '../db/database.js';
import type { Actor } from '../http/principal.js';
import { settingsColumn } from './columns.js';
import type { TenancyService } from './service.js';
import * as store from './store.js';

/**
 * A tenant's retention settings (docs/operations.md, "Retention"), kept in its settings under
 * `retention`. Ages are whole days; null keeps forever. The defaults keep everything but the
 * events of runs that ended a week ago, which are compacted (the run keeps its output, tool
 * calls, steps and cost; a replay of its stream answers its terminal event).
 */

const Days = (description: string, minimum = 1) =>
  Type.Union([Type.Integer({ minimum, maximum: 36_500 }), Type.Null()], { description: `${description}; null: keep forever` });

/** The audit trail outlives a month at least, so a key that may change settings cannot erase its own changes overnight. */
const MIN_AUDIT_EVENTS_DAYS = 30;

export const RetentionSettings = Type.Object({
  runsDays: Days(
    'ended runs (and their events) are deleted this many days after they started, and knowledge’s token usage rows this many days after they were recorded',
  ),
  conversationsDays: Days('conversations (and their messages) are deleted this many days after their last change'),
  filesDays: Days('uploaded files are deleted this many days after their upload'),
  auditEventsDays: Days(
    `audit events are deleted this many days after they were recorded (at least ${MIN_AUDIT_EVENTS_DAYS})`,
    MIN_AUDIT_EVENTS_DAYS,
  ),
  runEventsCompactAfterDays: Type.Union([Type.Integer({ minimum: 1, maximum: 36_500 }), Type.Null()], {
    description:
      'a finished run’s events are compacted to its terminal one this many days after it ended (its output, tool calls, steps and cost stay on the run); null: never',
  }),
});
export type RetentionSettings = Static<typeof RetentionSettings>;

const DEFAULT_RETENTION: RetentionSettings = {
  runsDays: null,
  conversationsDays: null,
  filesDays: null,
  auditEventsDays: null,
  runEventsCompactAfterDays: 7,
};

const SETTING = 'retention';

/** A tenant's settings' retention, the defaults filling what was never set. */
function retentionOf(settings: Record<string, unknown>): RetentionSettings {
  const stored = settings[SETTING];
  const own = stored && typeof stored === 'object' ? (stored as Partial<RetentionSettings>) : {};
  const out = { ...DEFAULT_RETENTION };
  for (const key of Object.keys(DEFAULT_RETENTION) as (keyof RetentionSettings)[]) {
    const v = own[key];
    const minimum = key === 'auditEventsDays' ? MIN_AUDIT_EVENTS_DAYS : 1;
    if (v === null || (Number.isInteger(v) && (v as number) >= minimum)) out[key] = v as number | null;
  }
  return out;
}

/** Retention settings read and set through the tenant's settings (audited there), and audit events deleted. */
export class RetentionSettingsService {
  private readonly db: Db;
  private readonly tenancy: TenancyService;

  constructor({ db, tenancy }: { db: Db; tenancy: TenancyService }) {
    this.db = db;
    this.tenancy = tenancy;
  }

  async get(tenantId: string): Promise<RetentionSettings> {
    return retentionOf(await this.tenancy.getSettings(tenantId));
  }

  /** Fields left out keep their value; null keeps forever. */
  async set(tenantId: string, patch: Partial<RetentionSettings>, actor: Actor): Promise<RetentionSettings> {
    // Merged with the value read inside the settings' transaction, not a read before it: concurrent
    // changes of different fields both stay.
    const settings = await this.tenancy.updateSettings(
      tenantId,
      (current) => ({ [SETTING]: { ...retentionOf(current), ...patch } }),
      actor,
    );
    return retentionOf(settings);
  }

  /** Every tenant with its retention, for the sweep. */
  async all(): Promise<{ tenantId: string; retention: RetentionSettings }[]> {
    const tenants = await this.tenancy.listTenants();
    return tenants.map((t) => ({ tenantId: t.id, retention: retentionOf(settingsColumn(t.settings)) }));
  }

  deleteAuditEventsBefore(tenantId: string, cutoff: string, limit: number) {
    return store.deleteAuditEventsBefore(this.db.kysely, tenantId, cutoff, limit);
  }
}
