import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/database.js';
import { isDatabaseUnavailable } from '../errors.js';
import { type Clock, systemClock } from '../clock.js';
import { Loop } from '../scheduler/loop.js';
import type { RetentionSettings } from '../tenancy/retention.js';

/**
 * The retention sweep (docs/operations.md, "Retention"): on a loop, for each tenant, deletes what is
 * older than its settings and compacts finished runs' events, each domain deleting its own rows in
 * small batches (one short transaction each, a turn of the event loop between them, so writers are
 * never held for long), then on SQLite hands the freed pages back. Replicas may sweep at once: every
 * delete is of rows already past their age, so doing it twice deletes nothing more.
 *
 * On SQLite a batch waits, as the group commit does, while the WAL checkpointer holds writers back, and a
 * batch that still meets the lock (the checkpoint's RESTART, the CLI, another process) is tried again a
 * few times after a pause. A kind that keeps failing is logged and left to the next pass, and the pass
 * goes on with the other kinds and tenants and still hands the free pages back: under a backlog every
 * pass must make progress, or the file only grows.
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

/** What the sweep asks of knowledge (knowledge/index.ts): its token usage rows deleted. */
interface KnowledgeRetention {
  deleteUsageBefore(tenantId: string, cutoff: string, limit: number): Promise<number>;
}

/** What the sweep asks of tenancy (tenancy/retention.ts): each tenant's settings, and its audit events deleted. */
interface TenantsRetention {
  all(): Promise<{ tenantId: string; retention: RetentionSettings }[]>;
  deleteAuditEventsBefore(tenantId: string, cutoff: string, limit: number): Promise<number>;
}

/** What one pass did; the metrics count it (the sweep's `onSwept`). */
export interface SweepCounts {
  runs: number;
  compactedRuns: number;
  /** Events deleted by compaction (a deleted run's events are not counted apart). */
  compactedEvents: number;
  conversations: number;
  files: number;
  auditEvents: number;
  /** Knowledge's token usage rows (they follow runsDays, as the runs' usage report does). */
  knowledgeUsage: number;
  /** SQLite pages handed back to the file system. */
  reclaimedPages: number;
  /** Kinds of one tenant left for the next pass because their batches kept failing. */
  failures: number;
}

export interface RetentionSweepOptions {
  db: Db;
  tenants: TenantsRetention;
  runs: RunsRetention;
  conversations: ConversationsRetention;
  knowledge: KnowledgeRetention;
  log: FastifyBaseLogger;
  /** Between passes (0: no background passes; `sweepOnce` still works). */
  intervalMs: number;
  /** Rows per batch (each its own transaction). */
  batchSize?: number;
  /** Batches of one kind for one tenant in one pass; the rest waits for the next pass. */
  maxBatches?: number;
  /** Ages are measured on it (default: real time). */
  clock?: Clock;
  /** Told of each pass's counts (the metrics); absent, nothing is. */
  onSwept?: (counts: SweepCounts) => void;
}

const DAY_MS = 24 * 3600 * 1000;

/** Pauses before each retry of a batch that met a lock or a lost connection: about 4 s in all. */
const RETRY_PAUSES_MS = [20, 100, 300, 1000, 2500];

/** A lock held by another connection, a snapshot gone stale, a deadlock or a serialization failure: worth a retry. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && (/^SQLITE_(BUSY|LOCKED)/.test(code) || code === '40P01' || code === '40001')) return true;
  return isDatabaseUnavailable(err);
}

export class RetentionSweep {
  private readonly clock: Clock;
  private readonly loop: Loop | null;
  private readonly batchSize: number;
  private readonly maxBatches: number;
  private warnedNotIncremental = false;

  constructor(private readonly o: RetentionSweepOptions) {
    this.clock = o.clock ?? systemClock;
    this.batchSize = o.batchSize ?? 500;
    this.maxBatches = o.maxBatches ?? 200;
    this.loop = o.intervalMs > 0 ? new Loop('retention sweep', o.intervalMs, async () => void (await this.sweepOnce()), o.log) : null;
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
      knowledgeUsage: 0,
      reclaimedPages: 0,
      failures: 0,
    };
    const now = this.clock.now();
    const at = new Date(now).toISOString();
    const before = (days: number) => new Date(now - days * DAY_MS).toISOString();
    for (const { tenantId, retention: r } of await this.o.tenants.all()) {
      // Each kind on its own: one that fails is left to the next pass, the others still go.
      const kind = async (name: string, work: () => Promise<void>) => {
        try {
          await work();
        } catch (err) {
          counts.failures++;
          this.o.log.warn({ err, tenantId, kind: name }, 'retention sweep: a kind failed; the next pass tries again');
        }
      };
      // Runs first: a run deleted needs no compaction.
      if (r.runsDays !== null) {
        const cutoff = before(r.runsDays);
        await kind('runs', async () => {
          await this.batches(
            (n) => this.o.runs.deleteEndedBefore(tenantId, cutoff, n),
            (n) => (counts.runs += n),
          );
        });
      }
      // Knowledge's spends are usage history beside the runs' (whose report is read from the runs):
      // kept as long as the runs are, so the usage page covers one period for both.
      if (r.runsDays !== null) {
        const cutoff = before(r.runsDays);
        await kind('knowledge_usage', async () => {
          await this.batches(
            (n) => this.o.knowledge.deleteUsageBefore(tenantId, cutoff, n),
            (n) => (counts.knowledgeUsage += n),
          );
        });
      }
      if (r.runEventsCompactAfterDays !== null) {
        const cutoff = before(r.runEventsCompactAfterDays);
        await kind('run_events', async () => {
          await this.batches(
            async (n) => {
              const done = await this.o.runs.compactEventsBefore(tenantId, cutoff, at, n);
              counts.compactedEvents += done.events;
              return done.runs;
            },
            (n) => (counts.compactedRuns += n),
          );
        });
      }
      if (r.conversationsDays !== null) {
        const cutoff = before(r.conversationsDays);
        await kind('conversations', async () => {
          await this.batches(
            (n) => this.o.conversations.deleteConversationsBefore(tenantId, cutoff, n),
            (n) => (counts.conversations += n),
          );
        });
      }
      if (r.filesDays !== null) {
        const cutoff = before(r.filesDays);
        await kind('files', async () => {
          await this.batches(
            (n) => this.o.conversations.deleteFilesBefore(tenantId, cutoff, n),
            (n) => (counts.files += n),
          );
        });
      }
      if (r.auditEventsDays !== null) {
        const cutoff = before(r.auditEventsDays);
        await kind('audit_events', async () => {
          await this.batches(
            (n) => this.o.tenants.deleteAuditEventsBefore(tenantId, cutoff, n),
            (n) => (counts.auditEvents += n),
          );
        });
      }
    }
    const deleted = counts.runs + counts.compactedEvents + counts.conversations + counts.files + counts.auditEvents + counts.knowledgeUsage;
    // Also after a pass that deleted nothing: an earlier one may have deleted and then failed to hand back.
    if (this.o.db.reclaimFreePages) {
      try {
        const reclaimed = await this.o.db.reclaimFreePages();
        counts.reclaimedPages = reclaimed.pages;
        if (deleted && !reclaimed.incremental && !this.warnedNotIncremental) {
          this.warnedNotIncremental = true;
          this.o.log.info(
            'retention: freed space is reused but not handed back to the disk; `agentry vacuum` (server stopped) converts the database',
          );
        }
      } catch (err) {
        counts.failures++;
        this.o.log.warn({ err }, 'retention sweep: handing free pages back failed; the next pass tries again');
      }
    }
    if (deleted || counts.failures) this.o.log.info({ ...counts }, 'retention sweep');
    this.o.onSwept?.(counts);
    return counts;
  }

  /**
   * Deletes batch after batch until one comes back short (or the pass's budget is spent), telling
   * `deleted` each batch's rows as it commits (a later failure keeps what was done in the counts).
   */
  private async batches(batch: (limit: number) => Promise<number>, deleted: (n: number) => void): Promise<void> {
    for (let i = 0; i < this.maxBatches; i++) {
      const n = await this.retried(() => batch(this.batchSize));
      deleted(n);
      if (n < this.batchSize) break;
      // A turn of the event loop between batches: requests and the run engine's commits go first.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** One batch, and again after a pause when it met a lock. */
  private async retried<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        if (attempt >= RETRY_PAUSES_MS.length || !isTransient(err)) throw err;
        await new Promise<void>((resolve) => setTimeout(resolve, RETRY_PAUSES_MS[attempt]));
      }
    }
  }
}
