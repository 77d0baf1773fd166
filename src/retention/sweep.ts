import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/database.js';
import { reclaimFreePages } from '../db/vacuum.js';
import { type Clock, systemClock } from '../scheduler/clock.js';
import { Loop } from '../scheduler/loop.js';
import type { RetentionSettings } from '../tenancy/retention.js';

/**
 * The retention sweep (docs/operations.md, "Retention"): on a loop, for each tenant, deletes what is
 * older than its settings and compacts finished runs' events, each domain deleting its own rows in
 * small batches (one short transaction each, a turn of the event loop between them, so writers are
 * never held for long), then on SQLite hands the freed pages back. Replicas may sweep at once: every
 * delete is of rows already past their age, so doing it twice deletes nothing more.
 */

/** What the sweep asks of runs (runs/retention.ts). */
interface RunsRetention {
  deleteEndedBefore(tenantId: string, cutoff: string, limit: number): Promise<number>;
  compactEventsBefore(tenantId: string, cutoff: string, at: string, limit: number): Promise<{ runs: number; events: number }>;
}

/** What the sweep asks of conversations and files (conversations/retention.ts). */
interface ConversationsRetention {
  deleteConversationsBefore(tenantId: string, cutoff: string, limit: number): Promise<number>;
  deleteFilesBefore(tenantId: string, cutoff: string, limit: number): Promise<number>;
}

/** What the sweep asks of tenancy (tenancy/retention.ts): each tenant's settings, and its audit events deleted. */
interface TenantsRetention {
  all(): Promise<{ tenantId: string; retention: RetentionSettings }[]>;
  deleteAuditEventsBefore(tenantId: string, cutoff: string, limit: number): Promise<number>;
}

/** What one pass did; the metrics count it (a listener of `onSwept`). */
export interface SweepCounts {
  runs: number;
  compactedRuns: number;
  /** Events deleted by compaction (a deleted run's events are not counted apart). */
  compactedEvents: number;
  conversations: number;
  files: number;
  auditEvents: number;
  /** SQLite pages handed back to the file system. */
  reclaimedPages: number;
}

export interface RetentionSweepOptions {
  db: Db;
  tenants: TenantsRetention;
  runs: RunsRetention;
  conversations: ConversationsRetention;
  log: FastifyBaseLogger;
  /** Between passes (0: no background passes; `sweepOnce` still works). */
  intervalMs: number;
  /** Rows per batch (each its own transaction). */
  batchSize?: number;
  /** Batches of one kind for one tenant in one pass; the rest waits for the next pass. */
  maxBatches?: number;
}

const DAY_MS = 24 * 3600 * 1000;

export class RetentionSweep {
  private clock: Clock = systemClock;
  private readonly loop: Loop | null;
  private readonly batchSize: number;
  private readonly maxBatches: number;
  private warnedNotIncremental = false;
  /** Told of each pass's counts (the metrics). */
  readonly onSwept: ((counts: SweepCounts) => void)[] = [];

  constructor(private readonly o: RetentionSweepOptions) {
    this.batchSize = o.batchSize ?? 500;
    this.maxBatches = o.maxBatches ?? 200;
    this.loop = o.intervalMs > 0 ? new Loop('retention sweep', o.intervalMs, async () => void (await this.sweepOnce()), o.log) : null;
  }

  /** Ages are measured on this clock (tests move it). */
  useClock(clock: Clock) {
    this.clock = clock;
  }

  start() {
    this.loop?.start();
  }

  stop(): Promise<void> {
    return this.loop?.stop() ?? Promise.resolve();
  }

  /** One pass over every tenant; what it did. */
  async sweepOnce(): Promise<SweepCounts> {
    const counts: SweepCounts = {
      runs: 0,
      compactedRuns: 0,
      compactedEvents: 0,
      conversations: 0,
      files: 0,
      auditEvents: 0,
      reclaimedPages: 0,
    };
    const now = this.clock.now().getTime();
    const at = new Date(now).toISOString();
    const before = (days: number) => new Date(now - days * DAY_MS).toISOString();
    for (const { tenantId, retention: r } of await this.o.tenants.all()) {
      // Runs first: a run deleted needs no compaction.
      if (r.runsDays !== null) counts.runs += await this.batches((n) => this.o.runs.deleteEndedBefore(tenantId, before(r.runsDays!), n));
      if (r.runEventsCompactAfterDays !== null) {
        const cutoff = before(r.runEventsCompactAfterDays);
        counts.compactedRuns += await this.batches(async (n) => {
          const done = await this.o.runs.compactEventsBefore(tenantId, cutoff, at, n);
          counts.compactedEvents += done.events;
          return done.runs;
        });
      }
      if (r.conversationsDays !== null) {
        const cutoff = before(r.conversationsDays);
        counts.conversations += await this.batches((n) => this.o.conversations.deleteConversationsBefore(tenantId, cutoff, n));
      }
      if (r.filesDays !== null) {
        const cutoff = before(r.filesDays);
        counts.files += await this.batches((n) => this.o.conversations.deleteFilesBefore(tenantId, cutoff, n));
      }
      if (r.auditEventsDays !== null) {
        const cutoff = before(r.auditEventsDays);
        counts.auditEvents += await this.batches((n) => this.o.tenants.deleteAuditEventsBefore(tenantId, cutoff, n));
      }
    }
    const deleted = counts.runs + counts.compactedEvents + counts.conversations + counts.files + counts.auditEvents;
    if (deleted && this.o.db.dialect === 'sqlite') {
      const reclaimed = await reclaimFreePages(this.o.db.location);
      counts.reclaimedPages = reclaimed.pages;
      if (!reclaimed.incremental && !this.warnedNotIncremental) {
        this.warnedNotIncremental = true;
        this.o.log.info(
          'retention: freed space is reused but not handed back to the disk; `agentry vacuum` (server stopped) converts the database',
        );
      }
    }
    if (deleted) this.o.log.info({ ...counts }, 'retention sweep');
    for (const listener of this.onSwept) listener(counts);
    return counts;
  }

  /** Deletes batch after batch until one comes back short (or the pass's budget is spent); the rows deleted. */
  private async batches(batch: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    for (let i = 0; i < this.maxBatches; i++) {
      const n = await batch(this.batchSize);
      total += n;
      if (n < this.batchSize) break;
      // A turn of the event loop between batches: requests and the run engine's commits go first.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return total;
  }
}
