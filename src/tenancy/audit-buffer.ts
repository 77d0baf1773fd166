import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { newId, now } from '../ids.js';
import { type AuditInput, auditRow } from './audit.js';
import * as store from './store.js';

/** An audit event's row as a caller has its values (`detail` as JSON text): the buffer stamps its id and time. */
export type AuditRowValues = Omit<Database['audit_events'], 'id' | 'created_at'>;

/**
 * Audit events of hot paths (identity's authorization decisions): queued in memory and written in batches, at
 * most `FLUSH_MS` later (or at once when `MAX_BATCH` are queued), so a decision costs no database
 * write of its own. `flush()` writes what is queued (the app calls it on close); events still queued
 * when the process is killed outright are lost.
 *
 * Each event is stamped (id, created_at) when it is added, not when it is written, and queued as its
 * row; a batch is written by the store's prepared multi-row inserts (row counts that are powers of
 * two, so the statements are few and reused), in one transaction when it takes more than one.
 */
export class AuditBuffer {
  static readonly FLUSH_MS = 50;
  /** A full batch is one statement: 256 rows x 9 parameters, well under both dialects' limits. */
  static readonly MAX_BATCH = 256;
  private queue: Database['audit_events'][] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    /** Where a failed batch is reported (identity gives the app's logger); standard error unless given. */
    private readonly onError: (err: unknown) => void = (err) => process.stderr.write(`agentry: audit batch failed: ${String(err)}\n`),
  ) {}

  add(event: AuditInput) {
    this.enqueue(auditRow(event));
  }

  /** `add` for callers that have the row's values at hand. */
  addRow(values: AuditRowValues) {
    // Every row with its columns in one order: a batch is one prepared INSERT of that shape.
    this.enqueue({
      id: newId(),
      tenant_id: values.tenant_id,
      actor_type: values.actor_type,
      actor_id: values.actor_id,
      action: values.action,
      resource_type: values.resource_type,
      resource_id: values.resource_id,
      detail: values.detail,
      created_at: now(),
    });
  }

  private enqueue(row: Database['audit_events']) {
    this.queue.push(row);
    if (this.queue.length >= AuditBuffer.MAX_BATCH) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), AuditBuffer.FLUSH_MS);
  }

  /** Writes every queued event; resolves when they (and earlier batches) are stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const rows = this.queue;
    this.queue = [];
    if (rows.length) {
      this.writing = this.writing.then(() => this.write(rows).catch((err) => this.onError(err)));
    }
    return this.writing;
  }

  private async write(rows: Database['audit_events'][]): Promise<void> {
    // A power of two rows is one statement; any other count is several, committed together.
    if ((rows.length & (rows.length - 1)) === 0) await store.insertAuditEvents(this.db.kysely, rows);
    else await this.db.kysely.transaction().execute((trx) => store.insertAuditEvents(trx, rows));
  }
}
