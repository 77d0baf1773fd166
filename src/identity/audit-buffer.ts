import { CompiledQuery } from 'kysely';
import type { Db } from '../db/database.js';
import { newId } from '../ids.js';
import type { AuditInput } from '../tenancy/audit.js';

/** The columns of audit_events, in the order each queued row holds its values. */
const COLUMNS = ['id', 'tenant_id', 'actor_type', 'actor_id', 'action', 'resource_type', 'resource_id', 'detail', 'created_at'] as const;
const WIDTH = COLUMNS.length;

/**
 * Audit events of hot paths (authorization decisions): queued in memory and written in batches, at
 * most `FLUSH_MS` later (or at once when `MAX_BATCH` are queued), so a decision costs no database
 * write of its own. `flush()` writes what is queued (the app calls it on close); events still queued
 * when the process is killed outright are lost.
 *
 * Each event is stamped (id, created_at) when it is added, not when it is written, and queued as its
 * column values; a batch is written by a few prepared multi-row inserts (row counts that are powers
 * of two, so the statements are few and reused), in one transaction when it takes more than one.
 */
export class AuditBuffer {
  static readonly FLUSH_MS = 50;
  /** A full batch is one statement: 256 rows x 9 parameters, well under both dialects' limits. */
  static readonly MAX_BATCH = 256;
  /** Queued rows, WIDTH values each, in COLUMNS order. */
  private queue: unknown[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private readonly statements = new Map<number, string>();

  /** Where a failed batch is reported (the app points it at its logger). */
  onError: (err: unknown) => void = (err) => process.stderr.write(`agentry: audit batch failed: ${String(err)}\n`);

  constructor(private readonly db: Db) {}

  add(event: AuditInput) {
    this.addRow(
      event.tenantId,
      event.actor.type,
      event.actor.id,
      event.action,
      event.resourceType,
      event.resourceId ?? null,
      JSON.stringify(event.detail ?? {}),
    );
  }

  /** `add` for callers that have the row's values at hand (`detail` as JSON text). */
  addRow(
    tenantId: string,
    actorType: string,
    actorId: string | null,
    action: string,
    resourceType: string,
    resourceId: string | null,
    detail: string,
  ) {
    const ms = Date.now();
    this.queue.push(newId(), tenantId, actorType, actorId, action, resourceType, resourceId, detail, isoAt(ms));
    if (this.queue.length >= AuditBuffer.MAX_BATCH * WIDTH) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), AuditBuffer.FLUSH_MS);
  }

  /** Writes every queued event; resolves when they (and earlier batches) are stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const values = this.queue;
    this.queue = [];
    if (values.length) {
      this.writing = this.writing.then(() => this.write(values).catch((err) => this.onError(err)));
    }
    return this.writing;
  }

  private async write(values: unknown[]): Promise<void> {
    const queries: CompiledQuery[] = [];
    for (let at = 0, left = values.length / WIDTH; left > 0; ) {
      const rows = Math.min(AuditBuffer.MAX_BATCH, 2 ** Math.floor(Math.log2(left)));
      queries.push(CompiledQuery.raw(this.insertSql(rows), values.slice(at, at + rows * WIDTH)));
      at += rows * WIDTH;
      left -= rows;
    }
    // Raw statements pass by the change-tracking plugin: say what they write, as it would.
    this.db.changes.changed('audit_events');
    if (queries.length === 1) {
      await this.db.kysely.executeQuery(queries[0]);
      return;
    }
    await this.db.kysely.transaction().execute(async (trx) => {
      for (const q of queries) await trx.executeQuery(q);
    });
  }

  /** `insert into audit_events (...) values (...), ...` for `rows` rows, in the database's dialect. */
  private insertSql(rows: number): string {
    let sql = this.statements.get(rows);
    if (sql === undefined) {
      const tuples: string[] = [];
      for (let r = 0, n = 1; r < rows; r++) {
        const marks: string[] = [];
        for (let c = 0; c < WIDTH; c++, n++) marks.push(this.db.dialect === 'postgres' ? `$${n}` : '?');
        tuples.push(`(${marks.join(', ')})`);
      }
      sql = `insert into "audit_events" (${COLUMNS.map((c) => `"${c}"`).join(', ')}) values ${tuples.join(', ')}`;
      this.statements.set(rows, sql);
    }
    return sql;
  }
}

// ---- cheap stamps: one ISO string per millisecond ----

let isoMs = NaN;
let isoText = '';

/** `new Date(ms).toISOString()`, made once per millisecond. */
export function isoAt(ms: number): string {
  if (ms !== isoMs) {
    isoText = new Date(ms).toISOString();
    isoMs = ms;
  }
  return isoText;
}
