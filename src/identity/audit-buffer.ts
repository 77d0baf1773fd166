import type { Db } from '../db/database.js';
import { auditRow, insertAuditRows, type AuditInput, type AuditRow } from '../tenancy/audit.js';

/**
 * Audit events of hot paths (authorization decisions): queued in memory and written in batches, one
 * transaction per batch, at most `FLUSH_MS` later (or at once when `MAX_BATCH` are queued), so a
 * decision costs no database write of its own. `flush()` writes what is queued (the app calls it on
 * close); events still queued when the process is killed outright are lost.
 */
export class AuditBuffer {
  static readonly FLUSH_MS = 50;
  static readonly MAX_BATCH = 200;
  private queue: AuditRow[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();

  /** Where a failed batch is reported (the app points it at its logger). */
  onError: (err: unknown) => void = (err) => process.stderr.write(`agentry: audit batch failed: ${String(err)}\n`);

  constructor(private readonly db: Db) {}

  add(event: AuditInput) {
    this.queue.push(auditRow(event)); // stamped now, not when written
    if (this.queue.length >= AuditBuffer.MAX_BATCH) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), AuditBuffer.FLUSH_MS);
  }

  /** Writes every queued event; resolves when they (and earlier batches) are stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.queue;
    this.queue = [];
    if (batch.length) {
      this.writing = this.writing.then(() =>
        this.db.kysely
          .transaction()
          .execute((trx) => insertAuditRows(trx, batch))
          .catch((err) => this.onError(err)),
      );
    }
    return this.writing;
  }
}
