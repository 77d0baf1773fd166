import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { dialect, openTestDb } from '../helpers/app.js';

/**
 * PostgreSQL restarting (or an operator's pg_terminate_backend) ends every backend with FATAL 57P01
 * "terminating connection due to administrator command". The pool listens for errors only on idle
 * clients, so a client checked out and between two statements (inside a transaction) used to emit an
 * 'error' nobody listened to, and the process crashed (found by the soak, docs/benchmarks.md).
 */
describe.skipIf(dialect !== 'postgres')('a PostgreSQL connection ended by the server', () => {
  let opened: Awaited<ReturnType<typeof openTestDb>>;
  let db: Db;
  let admin: pg.Client;

  beforeAll(async () => {
    opened = await openTestDb();
    db = opened.db;
    admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await opened?.close();
  });

  it('while checked out between two statements: that transaction fails, the process stays up, the next query works', async () => {
    const transaction = db.kysely.transaction().execute(async (trx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
      // Waits (up to 5 s) until the backend has sent its FATAL message and exited.
      const ended = await admin.query('select pg_terminate_backend($1, 5000) as ended', [rows[0].pid]);
      expect(ended.rows[0].ended).toBe(true);
      // The message arrives while no statement of this connection is active.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await sql`select 1`.execute(trx);
    });
    await expect(transaction).rejects.toThrow();
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db.kysely);
    expect(rows[0].one).toBe(1);
  });
});
