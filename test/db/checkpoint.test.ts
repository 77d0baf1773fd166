import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCheckpointer } from '../../src/db/checkpointer.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';

/**
 * On SQLite, WAL checkpoints run in a worker thread (db/checkpointer.ts), not inside the server's
 * commits: the data reaches the database file while the server's connection only appends to the WAL
 * (its own threshold is 20,000 pages, far above what this test writes), and the WAL is rewound
 * rather than left to grow under steady writes.
 */
describe.skipIf(dialect !== 'sqlite')('WAL checkpoints off the event loop', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-checkpoint-'));
  let db: Db | undefined;
  afterAll(async () => {
    await db?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('copies committed pages into the database file and keeps the WAL bounded', async () => {
    db = openDatabase({ dataDir: dir });
    const file = path.join(dir, 'agentry.sqlite');
    await sql`create table scratch (id integer primary key, payload blob not null)`.execute(db.kysely);
    const payload = Buffer.alloc(8192, 7);
    const walSizes: number[] = [];
    // ~15,000 WAL frames in 5,000 commits, in bursts of 200. After each burst the test waits until the
    // worker has copied every frame of the WAL into the database file: then the next burst's first
    // commit writes the WAL from its start again. Waiting for the file to grow instead (or a fixed
    // pause before that) was not enough on a loaded machine: a checkpoint that ends while the writer
    // goes on does not let the WAL be rewound, and CI's WAL reached 23-30 MB. The bound below (20 MB)
    // holds by the worker's checkpoints; without them the wait times out.
    const commits = 5000;
    for (let i = 0; i < commits; i++) {
      await sql`insert into scratch (payload) values (${payload})`.execute(db.kysely);
      if (i % 200 === 199) {
        await expect.poll(() => walCopied(file), { timeout: 30_000, interval: 10 }).toBe(true);
        walSizes.push(fs.statSync(`${file}-wal`).size);
      }
    }
    const written = commits * payload.length;
    // Only a checkpoint moves pages from the WAL into the file; the server's connection never ran one.
    await expect.poll(() => fs.statSync(file).size, { timeout: 5000, interval: 50 }).toBeGreaterThan(written);
    // Rewound along the way: the WAL never held everything that was written.
    expect(Math.max(...walSizes)).toBeLessThan(written / 2);
    const rows = await sql<{ n: number }>`select count(*) as n from scratch`.execute(db.kysely);
    expect(Number(rows.rows[0].n)).toBe(commits);
  });
});

/**
 * Whether a checkpoint has copied every frame of the database's WAL into its file: the wal-index header
 * in `-shm` holds the WAL's last valid frame (mxFrame, at byte 16) and the frames copied (nBackfill, at
 * byte 96), in the machine's byte order (SQLite's file format, "The WAL-Index Format").
 */
function walCopied(file: string): boolean {
  const header = Buffer.alloc(100);
  const shm = fs.openSync(`${file}-shm`, 'r');
  fs.readSync(shm, header, 0, 100, 0);
  fs.closeSync(shm);
  const u32 = (at: number) => (os.endianness() === 'LE' ? header.readUInt32LE(at) : header.readUInt32BE(at));
  return u32(96) === u32(16);
}

/**
 * A RESTART checkpoint holds SQLite's write lock for milliseconds; the worker raises a flag for its
 * duration (db/checkpointer.ts) so the server's writers wait for `writesPaused()` instead of meeting
 * the lock and sleeping in the busy handler with the event loop. Here the worker checkpoints every 5
 * ms and rewinds the WAL past 8 pages, while the test writes as the server's writers do: waiting
 * whenever `writesPaused()` gives it something to wait for.
 */
describe.skipIf(dialect !== 'sqlite')('writers held back during a RESTART checkpoint', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-checkpoint-gate-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('tells writers to wait while the WAL is rewound, and lets them go on afterwards', async () => {
    const file = path.join(dir, 'gate.sqlite');
    const sqlite = new SQLite(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.exec('create table scratch (id integer primary key, payload blob not null)');
    const insert = sqlite.prepare('insert into scratch (payload) values (?)');
    const checkpointer = startCheckpointer(file, { intervalMs: 5, restartPages: 8 });
    const payload = Buffer.alloc(8192, 3);
    let writes = 0;
    let pauses = 0;
    try {
      // Until the flag has been seen up a few times (each time waited out), or 10 s.
      for (const end = Date.now() + 10_000; pauses < 3 && Date.now() < end; ) {
        const paused = checkpointer.writesPaused();
        if (paused) {
          pauses++;
          // Writers asking during the same pause share one promise (the flag may also have dropped).
          expect([paused, undefined]).toContain(checkpointer.writesPaused());
          // Settles once the worker says the RESTART is over (the test would time out otherwise).
          await paused;
        }
        insert.run(payload);
        writes++;
        // A turn of the event loop, as between the server's batches: the worker's messages come in.
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      await checkpointer.stop();
    }
    expect(pauses).toBeGreaterThanOrEqual(3);
    // Nothing was lost to the waits, and the WAL was rewound along the way.
    expect((sqlite.prepare('select count(*) as n from scratch').get() as { n: number }).n).toBe(writes);
    // The WAL header's checkpoint sequence number counts its resets (SQLite's file format, "WAL file
    // format"); the file itself keeps the size it grew to, so its size says nothing of a rewind.
    const header = Buffer.alloc(32);
    const wal = fs.openSync(`${file}-wal`, 'r');
    fs.readSync(wal, header, 0, 32, 0);
    fs.closeSync(wal);
    expect(header.readUInt32BE(12)).toBeGreaterThanOrEqual(1);
    // Once stopped, nothing holds writers back.
    expect(checkpointer.writesPaused()).toBeUndefined();
    sqlite.close();
  });
});

/**
 * A transaction that reads before it writes, while another connection holds the write lock for a
 * moment (the checkpointer's RESTART, a CLI): SQLite does not run its busy handler for a transaction
 * already open, so one begun deferred failed at its first write with SQLITE_BUSY (a 503). Begun
 * immediate, it waits for the lock like a single statement. The lock is held by another process: the
 * wait blocks this one's event loop, as SQLite's busy handler does.
 */
describe.skipIf(dialect !== 'sqlite')('a transaction meeting another connection’s write lock', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t?.close());

  it('waits for the lock instead of failing at its first write', async () => {
    const { key } = await t.tenant('acme');
    const file = path.join(t.config.dataDir, 'agentry.sqlite');
    // Holds the write lock for 400 ms, from another process.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = new (require('better-sqlite3'))(${JSON.stringify(file)}); db.exec('begin immediate');
         process.stdout.write('locked\\n'); setTimeout(() => { db.exec('commit'); db.close(); }, 400);`,
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    // Creating a knowledge base counts the tenant's bases, then inserts: a read, then a write.
    const created = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'During a lock' } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    await new Promise((resolve) => holder.once('exit', resolve));
  });
});
