import SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointAwareDialect } from '../../src/db/checkpointer.js';
import type { Db } from '../../src/db/database.js';
import { GroupCommit } from '../../src/db/group-commit.js';
import type { Database } from '../../src/db/schema.js';
import { dialect, openTestDb } from '../helpers/app.js';

/**
 * Group commit (db/group-commit.ts), on a real database of either dialect: writes queued together
 * share a transaction, at most `maxBatch` of them; a write that throws is the only one that fails,
 * and the others of its batch are written (run again alone).
 */
describe('group commit', () => {
  let opened: Awaited<ReturnType<typeof openTestDb>>;
  let db: Db;

  beforeAll(async () => {
    opened = await openTestDb({ migrate: false });
    db = opened.db;
    await sql`create table scratch (name varchar(40) primary key)`.execute(db.kysely);
  });
  afterAll(() => opened?.close());

  const namesIn = async (executor: Db['kysely'], prefix: string) =>
    (await sql<{ name: string }>`select name from scratch where name like ${`${prefix}%`} order by name`.execute(executor)).rows.map(
      (r) => r.name,
    );
  const names = async () =>
    (
      await db.kysely
        .selectFrom('scratch' as never)
        .select('name' as never)
        .orderBy('name' as never)
        .execute()
    ).map((r) => (r as { name: string }).name);

  /** A write inserting `name`, counting how often it ran; `fail` makes it throw after its insert. */
  function insert(name: string, runs: Map<string, number>, fail = false) {
    return async (trx: Db['kysely']) => {
      runs.set(name, (runs.get(name) ?? 0) + 1);
      await sql`insert into scratch (name) values (${name})`.execute(trx);
      if (fail) throw new Error(`${name} refused`);
      return name.toUpperCase();
    };
  }

  it('commits writes queued together; one that throws fails alone and the rest of its batch is written', async () => {
    const runs = new Map<string, number>();
    const writer = new GroupCommit(db.kysely, { maxBatch: 8 });
    const results = await Promise.allSettled(['a1', 'a2', 'a3', 'a4'].map((n) => writer.write(insert(n, runs, n === 'a3'))));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      'A1',
      'A2',
      'a3 refused',
      'A4',
    ]);
    expect(await names()).toEqual(['a1', 'a2', 'a4']);
    // They shared one transaction: a3's failure rolled back a1 and a2 with it, then each of the four
    // ran alone (a4, after a3 in the batch, never ran in the shared one).
    expect(Object.fromEntries(runs)).toEqual({ a1: 2, a2: 2, a3: 2, a4: 1 });
  });

  it('takes at most maxBatch writes per transaction, the rest in the next ones', async () => {
    const runs = new Map<string, number>();
    const writer = new GroupCommit(db.kysely, { maxBatch: 4 });
    const batchesSeen: number[] = [];
    const all = Array.from({ length: 10 }, (_, i) => `b${String(i).padStart(2, '0')}`);
    // b05 fails: only its batch (b04..b07) runs again, each alone (b06 and b07 had not run yet).
    const results = await Promise.allSettled(
      all.map((n) =>
        writer.write(async (trx) => {
          batchesSeen.push(writer.pending);
          return insert(n, runs, n === 'b05')(trx);
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect(await names()).toEqual(expect.arrayContaining(all.filter((n) => n !== 'b05')));
    expect((await names()).includes('b05')).toBe(false);
    expect(Object.fromEntries(runs)).toEqual({ b00: 1, b01: 1, b02: 1, b03: 1, b04: 2, b05: 2, b06: 1, b07: 1, b08: 1, b09: 1 });
    // While the first batch ran, the six others were still queued.
    expect(batchesSeen[0]).toBe(6);
  });

  it('runs beforeBatch outside the transaction before each batch, and writes queued meanwhile join a later batch', async () => {
    const runs = new Map<string, number>();
    let before = 0;
    const writer = new GroupCommit(db.kysely, {
      maxBatch: 2,
      beforeBatch: async () => {
        before++;
        // Outside the batch's transaction: its own statement commits on its own.
        await sql`insert into scratch (name) values (${`before-${before}`})`.execute(db.kysely);
      },
    });
    const first = writer.write(insert('c1', runs));
    const second = writer.write(async (trx) => {
      // Queued while a batch is being written: it waits for the next one.
      const late = writer.write(insert('c3', runs));
      await insert('c2', runs)(trx);
      return { late };
    });
    expect(await first).toBe('C1');
    expect(await (await second).late).toBe('C3');
    expect(before).toBe(2);
    expect((await names()).filter((n) => n.startsWith('c') || n.startsWith('before'))).toEqual(['before-1', 'before-2', 'c1', 'c2', 'c3']);
  });

  // SQLite's connection waits while the WAL checkpointer holds writers back (db/checkpointer.ts).
  it.skipIf(dialect !== 'sqlite')(
    'holds a batch back while the checkpointer holds writers back, and writes it once they may go on',
    async () => {
      const runs = new Map<string, number>();
      let release!: () => void;
      let paused: Promise<void> | undefined = new Promise<void>((r) => (release = r));
      let asked = 0;
      // The server's connection as openDatabase makes it, with the checkpointer's flag in the test's hands.
      const connection = new Kysely<Database>({
        dialect: new CheckpointAwareDialect({ database: new SQLite(db.location) }, () => {
          asked++;
          return paused;
        }),
      });
      try {
        const writer = new GroupCommit(connection, { maxBatch: 8 });
        let committed = false;
        const written = writer.write(insert('p1', runs)).then((v) => {
          committed = true;
          return v;
        });
        // Several turns of the event loop: the batch is waiting, nothing has run or been written.
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
        expect(asked).toBe(1);
        expect(committed).toBe(false);
        expect(runs.size).toBe(0);
        expect(await namesIn(db.kysely, 'p')).toEqual([]);
        paused = undefined;
        release();
        expect(await written).toBe('P1');
        expect(await namesIn(db.kysely, 'p')).toEqual(['p1']);
        // The next batch finds nothing to wait for and goes straight on (one transaction: one wait asked).
        expect(await writer.write(insert('p2', runs))).toBe('P2');
        expect(asked).toBe(2);
      } finally {
        await connection.destroy();
      }
    },
  );

  it('inserts the rows writes hand to `later` at the end of their batch, one INSERT per table and shape', async () => {
    const runs = new Map<string, number>();
    // Counts the statements executed (a template's first compile is seen by transformQuery too,
    // but only what runs has a result).
    const statements: string[] = [];
    const kinds = new WeakMap<object, string>();
    const counted = db.kysely.withPlugin({
      transformQuery: (args) => {
        kinds.set(args.queryId, args.node.kind);
        return args.node;
      },
      transformResult: async (args) => {
        statements.push(kinds.get(args.queryId) ?? '?');
        return args.result;
      },
    });
    const writer = new GroupCommit(counted, { maxBatch: 16 });
    const seenInside: string[][] = [];
    const results = await Promise.allSettled(
      ['e1', 'e2', 'e3', 'e4', 'e5', 'e6'].map((name) =>
        writer.write(async (trx, later) => {
          runs.set(name, (runs.get(name) ?? 0) + 1);
          later.insert('scratch' as never, { name } as never);
          // Not in the table yet: rows handed over go in after the batch's last write.
          seenInside.push(await namesIn(trx, 'e'));
          if (name === 'e4') throw new Error('e4 refused');
          return name;
        }),
      ),
    );
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      'e1',
      'e2',
      'e3',
      'e4 refused',
      'e5',
      'e6',
    ]);
    // e4's failure rolled the batch back: each ran again alone, and e4's row never went in.
    expect(await names()).toEqual(expect.arrayContaining(['e1', 'e2', 'e3', 'e5', 'e6']));
    expect((await names()).includes('e4')).toBe(false);
    expect(Object.fromEntries(runs)).toEqual({ e1: 2, e2: 2, e3: 2, e4: 2, e5: 1, e6: 1 });
    expect(seenInside.slice(0, 4)).toEqual([[], [], [], []]);

    // Without a failure, six writes' rows go in as two INSERTs (4 + 2 rows: powers of two).
    statements.length = 0;
    await Promise.all(
      ['f1', 'f2', 'f3', 'f4', 'f5', 'f6'].map((name) =>
        writer.write(async (_trx, later) => later.insert('scratch' as never, { name } as never)),
      ),
    );
    expect(statements.filter((k) => k === 'InsertQueryNode')).toHaveLength(2);
    expect((await names()).filter((n) => n.startsWith('f'))).toEqual(['f1', 'f2', 'f3', 'f4', 'f5', 'f6']);
  });

  it('fails only the write whose handed-over row the database refuses', async () => {
    await sql`insert into scratch (name) values ('g2')`.execute(db.kysely);
    const writer = new GroupCommit(db.kysely, { maxBatch: 8 });
    const results = await Promise.allSettled(
      ['g1', 'g2', 'g3'].map((name) => writer.write(async (_trx, later) => later.insert('scratch' as never, { name } as never))),
    );
    // g2 exists: the batch's INSERT failed as a whole, then each write went in alone.
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await names()).filter((n) => n.startsWith('g'))).toEqual(['g1', 'g2', 'g3']);
  });

  it.skipIf(dialect !== 'postgres')('writes up to `concurrency` batches at once, each in its own transaction (PostgreSQL)', async () => {
    const writer = new GroupCommit(db.kysely, { maxBatch: 1, concurrency: 2 });
    let arrived = 0;
    let release!: () => void;
    const bothIn = new Promise<void>((r) => (release = r));
    // Each write waits inside its transaction until the other has started: only two batches under
    // way at the same time finish.
    const write = (name: string) =>
      writer.write(async (trx) => {
        await sql`insert into scratch (name) values (${name})`.execute(trx);
        if (++arrived === 2) release();
        await bothIn;
        const { rows } = await sql<{ txid: string }>`select txid_current()::text as txid`.execute(trx);
        return rows[0].txid;
      });
    const [a, b] = await Promise.all([write('d1'), write('d2')]);
    expect(a).not.toBe(b);
    expect((await names()).filter((n) => n.startsWith('d'))).toEqual(['d1', 'd2']);
  });
});
