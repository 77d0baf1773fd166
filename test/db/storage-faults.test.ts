import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialect, startApp, type TestApp } from '../helpers/app.js';

/**
 * A storage fault (disk full, failing or read-only storage) is a real fault, not a mock: on SQLite
 * `max_page_count` set to the file's size makes any write that needs a new page fail with SQLITE_FULL
 * (SQLite itself rolls the transaction back); on PostgreSQL the database is made read-only
 * (`default_transaction_read_only`, SQLSTATE 25006) and its connections ended, so the pool's new ones
 * refuse writes. Either way: a 503 storage_unavailable with Retry-After, never a 500, /readyz says the
 * writes fail, and once the fault is gone the same write works without a restart.
 */
describe('a storage fault', () => {
  let t: TestApp;
  let key: string;
  let admin: pg.Client | undefined;
  let dbName = '';

  beforeAll(async () => {
    t = await startApp();
    ({ key } = await t.tenant());
    if (dialect === 'postgres') {
      admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await admin.connect();
      const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(t.db.kysely);
      dbName = rows[0].name;
    }
  });
  afterAll(async () => {
    await admin?.end();
    await t?.close();
  });

  /** An agent with a system prompt of 100,000 characters: its row needs new pages of the database. */
  const bigAgent = (name: string) =>
    t.api(key).POST('/api/v1/agents', { body: { name, appId: 'app', model: 'builtin/echo', systemPrompt: 'x'.repeat(100_000) } });

  async function breakStorage() {
    if (dialect === 'sqlite') {
      const [{ page_count }] = (await sql<{ page_count: number }>`pragma page_count`.execute(t.db.kysely)).rows;
      await sql.raw(`pragma max_page_count = ${page_count}`).execute(t.db.kysely);
      return;
    }
    await admin!.query(`alter database ${dbName} set default_transaction_read_only = on`);
    await admin!.query('select pg_terminate_backend(pid, 5000) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [
      dbName,
    ]);
  }

  async function repairStorage() {
    if (dialect === 'sqlite') {
      await sql.raw('pragma max_page_count = 1073741823').execute(t.db.kysely);
      return;
    }
    await admin!.query(`alter database ${dbName} set default_transaction_read_only = off`);
    await admin!.query('select pg_terminate_backend(pid, 5000) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [
      dbName,
    ]);
  }

  it('answers 503 storage_unavailable with Retry-After, /readyz reports it, and recovery needs no restart', async () => {
    expect((await bigAgent('before')).response.status).toBe(201);
    await breakStorage();

    // PostgreSQL: the pool may first meet a connection the server ended (503 database_unavailable); the
    // next one is a new, read-only connection.
    let res = await bigAgent('during');
    for (let i = 0; i < 5 && res.error?.code === 'database_unavailable'; i++) res = await bigAgent('during');
    expect(res.response.status).toBe(503);
    expect(res.response.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.error!.code).toBe('storage_unavailable');
    expect(Number(res.response.headers.get('retry-after'))).toBeGreaterThan(0);

    const ready = await t.api().GET('/readyz');
    expect(ready.response.status).toBe(503);
    expect(ready.error!.code).toBe('storage_unavailable');
    // Reads still work: the fault is the writes'.
    expect((await t.api(key).GET('/api/v1/agents')).response.status).toBe(200);
    expect((await t.api().GET('/healthz')).response.status).toBe(200);

    await repairStorage();
    res = await bigAgent('after');
    for (let i = 0; i < 5 && res.error?.code === 'database_unavailable'; i++) res = await bigAgent('after');
    expect(res.response.status).toBe(201);
    const readyAgain = await t.api().GET('/readyz');
    expect(readyAgain.response.status).toBe(200);
    const names = (await t.api(key).GET('/api/v1/agents')).data!.agents.map((a) => a.name).sort();
    expect(names).toEqual(['after', 'before']);
  });
});
