import type { Insertable, Kysely } from 'kysely';
import { insertRows } from './prepared.js';
import type { Database } from './schema.js';

/**
 * Rows the writes of one transaction add, inserted together just before it commits: one multi-row
 * INSERT per table and column list (db/prepared.ts insertRows) instead of one statement per row.
 * On PostgreSQL every statement is a round trip; on SQLite each costs its own binding and stepping.
 * A write must not read back the rows it handed over here: they are in the table only at the end.
 * Tables are written in the order they were first given rows.
 */
export class DeferredInserts {
  /** Rows per table and column list; a table's rows mostly have one list, so a short scan finds it. */
  private readonly shapes = new Map<string, { columns: string[]; rows: object[] }[]>();

  insert<T extends keyof Database & string>(table: T, row: Insertable<Database[T]>): void {
    const columns = Object.keys(row);
    let lists = this.shapes.get(table);
    if (!lists) {
      lists = [];
      this.shapes.set(table, lists);
    }
    let entry = lists.find((l) => sameColumns(l.columns, columns));
    if (!entry) {
      entry = { columns, rows: [] };
      lists.push(entry);
    }
    entry.rows.push(row);
  }

  async flush(trx: Kysely<Database>): Promise<void> {
    for (const [table, lists] of this.shapes)
      for (const { rows } of lists) await insertRows(trx, table as keyof Database & string, rows as never[]);
    this.shapes.clear();
  }
}

function sameColumns(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

type Write<T> = (trx: Kysely<Database>, later: DeferredInserts) => Promise<T>;

interface Queued {
  work: Write<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface GroupCommitOptions {
  /** Writes per transaction at most: a larger batch commits less often but holds up the next requests longer. */
  maxBatch: number;
  /**
   * Batches written at once (each in its own transaction and connection). 1 on SQLite, whose one
   * connection takes one transaction at a time anyway; more on PostgreSQL, where a batch spends most
   * of its time waiting for round trips.
   */
  concurrency?: number;
  /** Runs before each batch, outside its transaction; it reports its own failures (they do not stop the batch). */
  beforeBatch?: () => Promise<void>;
}

/**
 * Group commit: writes queued while the event loop handles one turn's I/O share one transaction and
 * one commit (on SQLite a commit costs more than a run's end statements; on PostgreSQL it is two round
 * trips). A batch is written after that turn's I/O (setImmediate), so new requests are served before
 * a queue of background writes, and at most `maxBatch` at a time, so they are not held up long.
 *
 * A write may also hand rows to `later` (DeferredInserts): the batch's rows of each table go in
 * together after its last write, before the commit.
 *
 * If one write of a batch throws (or its rows or the commit fail), the batch is rolled back and each
 * of its writes runs again alone in its own transaction: a write fails only for its own reasons. A
 * write may thus run twice and must keep its effects inside the transaction it is given.
 */
export class GroupCommit {
  private queue: Queued[] = [];
  /** Batches scheduled or being written. */
  private active = 0;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: GroupCommitOptions,
  ) {}

  /** Runs `work` in a transaction shared with other writes; resolves with its result once committed. */
  write<T>(work: Write<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  /** Writes waiting for a batch. */
  get pending(): number {
    return this.queue.length;
  }

  private schedule() {
    if (this.active >= (this.options.concurrency ?? 1)) return;
    this.active++;
    setImmediate(() => void this.writeBatch());
  }

  private async writeBatch() {
    try {
      // beforeBatch reports its own failures; the batch is written regardless.
      await this.options.beforeBatch?.().catch(() => {});
      const batch = this.queue.splice(0, this.options.maxBatch);
      if (batch.length === 1) await this.alone(batch[0]);
      else if (batch.length) await this.together(batch);
    } finally {
      this.active--;
      if (this.queue.length) this.schedule();
    }
  }

  /** Runs the writes one after the other in one transaction; the rows they handed over go in last. */
  private inTransaction(works: Write<unknown>[]): Promise<unknown[]> {
    return this.db.transaction().execute(async (trx) => {
      const later = new DeferredInserts();
      const results: unknown[] = [];
      for (const work of works) results.push(await work(trx, later));
      await later.flush(trx);
      return results;
    });
  }

  private async together(batch: Queued[]) {
    let results: unknown[];
    try {
      results = await this.inTransaction(batch.map((q) => q.work));
    } catch {
      // Not lost: each write runs again alone, so it fails (and is rejected with its error) only for its own reasons.
      for (const q of batch) await this.alone(q);
      return;
    }
    batch.forEach((q, i) => {
      q.resolve(results[i]);
    });
  }

  private async alone(q: Queued) {
    try {
      q.resolve((await this.inTransaction([q.work]))[0]);
    } catch (err) {
      q.reject(err);
    }
  }
}
