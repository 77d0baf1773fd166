import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { execute as executeOn } from '../helpers/execute.js';
import { checkpointWholeWal } from '../helpers/sqlite-file.js';

/**
 * A retention soak, bounded: rounds of sustained executes (several clients at once) under a one-day
 * retention of runs, conversations and audit events; after each round the app's clock is moved past
 * the retention and a pass runs while the next clients keep executing. The database must come back
 * down after every pass and not grow from round to round: on SQLite the file itself (the sweep hands
 * the pages back), on PostgreSQL the tables' total size after a plain VACUUM (what autovacuum does;
 * no VACUUM FULL). Time moves on the app's clock; runs' leases keep real time.
 */

const DAY = 24 * 3600 * 1000;
const ROUNDS = 4;
const RUNS_PER_ROUND = 120;
const CLIENTS = 4;
const TABLES = ['runs', 'run_events', 'messages', 'conversations', 'audit_events'];

let t: TestApp;
const clock = new ManualClock();
beforeAll(async () => {
  t = await startApp({ RETENTION_SWEEP_SECONDS: '0' }, { clock });
});
afterAll(() => t?.close());

/** The database's size as the disk sees it: the SQLite file (WAL copied in and emptied), or the tables' total after VACUUM. */
async function size(): Promise<number> {
  if (dialect === 'sqlite') {
    await checkpointWholeWal(t.db.kysely);
    return fs.statSync(t.db.location).size;
  }
  let total = 0;
  for (const table of TABLES) {
    await sql.raw(`vacuum ${table}`).execute(t.db.kysely);
    const { rows } = await sql<{ bytes: string }>`select pg_total_relation_size(${table}::regclass) as bytes`.execute(t.db.kysely);
    total += Number(rows[0].bytes);
  }
  return total;
}

describe('a retention soak', () => {
  it('keeps the database bounded: each pass brings it back down, and it does not grow from round to round', async () => {
    const { key } = await t.tenant('soak');
    const api = t.api(key);
    const agent = await t.agent(key);
    expect((await api.PUT('/api/v1/retention', { body: { runsDays: 1, conversationsDays: 1, auditEventsDays: 30 } })).response.status).toBe(
      200,
    );
    let sent = 0;
    const execute = async (count: number) => {
      const client = async () => {
        while (sent < count) {
          const n = sent++;
          // Random text: PostgreSQL compresses what it stores out of line, and repeated text would take no space.
          const message = `${n} ${randomBytes(2250).toString('base64')}`;
          const res = await executeOn(api, agent.id, { message });
          expect(res.response.status, JSON.stringify(res.error)).toBe(200);
        }
      };
      await Promise.all(Array.from({ length: CLIENTS }, client));
    };

    const sweep = t.services.retention.sweep;
    const afterPass: number[] = [];
    const beforePass: number[] = [];
    let target = 0;
    for (let round = 0; round < ROUNDS; round++) {
      target += RUNS_PER_ROUND;
      await execute(target);
      const full = await size();
      beforePass.push(full);
      // Past the retention of everything so far; the next clients execute while the pass runs.
      clock.set(new Date(Date.now() + 2 * DAY));
      const [counts] = await Promise.all([sweep.sweepOnce(), execute(target + 20)]);
      target += 20;
      expect(counts.failures).toBe(0);
      expect(counts.runs).toBeGreaterThanOrEqual(RUNS_PER_ROUND);
      // And a pass once those clients are done, so nothing written during the first sits at the end of a
      // PostgreSQL table, where it would keep VACUUM from cutting the free pages off.
      clock.set(new Date(Date.now() + 2 * DAY));
      expect((await sweep.sweepOnce()).failures).toBe(0);
      expect((await api.GET('/api/v1/runs')).data!.total).toBe(0);
      const swept = await size();
      // 120 runs of 3 KB messages, their replies and events: well over 500 KB came back.
      expect(full - swept, `round ${round}: ${full} -> ${swept} bytes`).toBeGreaterThan(500_000);
      afterPass.push(swept);
    }
    // Bounded: the space freed is used again, so a round's data takes no more room than the first's
    // did, and what stays after a pass does not grow past the second round's (PostgreSQL's indexes keep
    // the pages they grew to in the first round and reuse them; a little slack for page layout).
    const sizes = `before each pass: ${beforePass.join(', ')}; after: ${afterPass.join(', ')}`;
    expect(beforePass.at(-1)!, sizes).toBeLessThanOrEqual(beforePass[0] * 1.25);
    expect(afterPass.at(-1)!, sizes).toBeLessThanOrEqual(afterPass[1] * 1.25);
    expect((await t.api().GET('/healthz')).response.status).toBe(200);
  }, 240_000);
});
