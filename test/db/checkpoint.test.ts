import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { dialect } from '../helpers/app.js';

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
    // ~6,000 pages in 1,500 commits, spread over about two seconds of steady writing.
    for (let i = 0; i < 1500; i++) {
      await sql`insert into scratch (payload) values (${payload})`.execute(db.kysely);
      if (i % 100 === 99) {
        await new Promise((r) => setTimeout(r, 120));
        walSizes.push(fs.statSync(`${file}-wal`).size);
      }
    }
    const written = 1500 * payload.length;
    let size = 0;
    for (let waited = 0; waited < 5000 && size < written; waited += 50) {
      await new Promise((r) => setTimeout(r, 50));
      size = fs.statSync(file).size;
    }
    // Only a checkpoint moves pages from the WAL into the file; the server's connection never ran one.
    expect(size).toBeGreaterThan(written);
    // Rewound along the way: the WAL never held everything that was written.
    expect(Math.max(...walSizes)).toBeLessThan(written / 2);
    const rows = await sql<{ n: number }>`select count(*) as n from scratch`.execute(db.kysely);
    expect(Number(rows.rows[0].n)).toBe(1500);
  });
});
