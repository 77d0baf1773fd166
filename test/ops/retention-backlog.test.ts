import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { checkpointWholeWal } from '../helpers/sqlite-file.js';

/**
 * A backlog past retention on SQLite while another connection holds the write lock (as the WAL
 * checkpointer's RESTART or a CLI does): the sweep waits for it and retries, finishes its pass over
 * every domain, and hands the space back, so the file shrinks. Before, the first batch that met the
 * lock ("database is locked") failed the whole pass: nothing more was deleted and the file kept its size.
 * Time is moved on the app's clock; the lock is held by another process for a bounded while.
 */

const DAY = 24 * 3600 * 1000;
let t: TestApp;
const clock = new ManualClock();

beforeAll(async () => {
  t = await startApp({ RETENTION_SWEEP_SECONDS: '0' }, { clock });
});
afterAll(() => t?.close());

/** Another process takes the write lock of `file` and holds it `ms`; resolves once it holds it. */
function holdWriteLock(file: string, ms: number): Promise<{ done: Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const Database = require(process.env.SQLITE_MODULE);
       const db = new Database(process.env.DB_FILE);
       db.pragma('busy_timeout = 5000');
       db.exec('begin immediate');
       process.stdout.write('locked\\n');
       setTimeout(() => { db.exec('rollback'); db.close(); }, Number(process.env.HOLD_MS));`,
    ],
    {
      env: { ...process.env, SQLITE_MODULE: createRequire(import.meta.url).resolve('better-sqlite3'), DB_FILE: file, HOLD_MS: String(ms) },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stdout.once('data', () => resolve({ done }));
    child.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)));
  });
}

const fileSize = async () => {
  await checkpointWholeWal(t.db.kysely);
  return fs.statSync(t.db.location).size;
};

describe.runIf(dialect === 'sqlite')('a retention backlog on SQLite', () => {
  it('is swept while another connection holds the write lock: every domain done, the file shrinks', async () => {
    const { key } = await t.tenant('backlog');
    const api = t.api(key);
    const agent = await t.agent(key);
    const filler = 'x'.repeat(4000);
    for (let i = 0; i < 150; i++) {
      const res = await execute(api, agent.id, { message: `${i} ${filler}` });
      expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    }
    const retention = { runsDays: 1, conversationsDays: 1, auditEventsDays: 30 };
    expect((await api.PUT('/api/v1/retention', { body: retention })).response.status).toBe(200);
    const before = await fileSize();

    const sweep = t.services.retention.sweep;
    clock.set(Date.now() + 40 * DAY);
    // Longer than the connection's busy timeout (5 s): the first batch meets "database is locked".
    const holder = await holdWriteLock(t.db.location, 6000);
    const counts = await sweep.sweepOnce();
    await holder.done;

    expect(counts.runs).toBe(150);
    expect(counts.conversations).toBe(150);
    expect(counts.auditEvents).toBeGreaterThan(0);
    expect(counts.reclaimedPages).toBeGreaterThan(0);
    expect((await api.GET('/api/v1/runs')).data!.total).toBe(0);
    expect((await api.GET('/api/v1/conversations')).data!.total).toBe(0);
    expect((await t.api().GET('/healthz')).response.status).toBe(200);
    const after = await fileSize();
    // 150 runs of 4 KB messages, their replies and events: well over a megabyte handed back.
    expect(before - after).toBeGreaterThan(1_000_000);
  }, 60_000);
});
