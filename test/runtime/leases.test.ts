import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

// A process renews the leases of the runs it executes (runs/service.ts renewLeases); a run whose
// lease lapses is declared interrupted by any process. So a renewal must neither miss a run nor fail
// because ends of other runs are being written at the same time.

let t: TestApp;
let key: string;
let agentId: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  agentId = (await t.agent(key, { name: 'slow', appId: 'app' })).id;
});
afterAll(() => t.close());

const renew = () => (t.services.runs as unknown as { renewLeases(): Promise<void> }).renewLeases();
/** Starts `n` runs that take a while, and answers their ids once all are recorded as running. */
async function slowRuns(n: number) {
  const answers = Array.from({ length: n }, (_, i) => execute(t.api(key), agentId, { message: `/delay 150\nslow answer number ${i}` }));
  const rows = await vi.waitFor(
    async () => {
      const running = await t.db.kysely
        .selectFrom('runs')
        .select(['id', 'lease_expires_at'])
        .where('status', '=', 'running')
        .orderBy('id')
        .execute();
      if (running.length !== n) throw new Error('the runs were never all running');
      return running;
    },
    { timeout: 10_000, interval: 10 },
  );
  return { rows, answers: Promise.all(answers) };
}

describe('run leases', () => {
  it('renews the lease of every run this process executes', async () => {
    const { rows, answers } = await slowRuns(3);
    // The renewed lease ends later than the first only once the millisecond clock has moved.
    await new Promise((r) => setTimeout(r, 5));
    await renew();
    const after = await t.db.kysely
      .selectFrom('runs')
      .select(['id', 'lease_expires_at'])
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .orderBy('id')
      .execute();
    for (const [i, row] of after.entries()) expect(row.lease_expires_at! > rows[i].lease_expires_at!).toBe(true);
    for (const res of await answers) expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    // Ended runs hold no lease, and a renewal gives them none.
    await renew();
    const ended = await t.db.kysely
      .selectFrom('runs')
      .select('lease_expires_at')
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    expect(ended.map((r) => r.lease_expires_at)).toEqual([null, null, null]);
  });

  it.skipIf(dialect !== 'postgres')('does not deadlock with a transaction that updates the same runs in either order', async () => {
    const { rows, answers } = await slowRuns(2);
    const [a, b] = rows.map((r) => r.id);
    for (const [first, second] of [
      [a, b],
      [b, a],
    ]) {
      let renewal: Promise<void> | undefined;
      // As a batch of ends does: one run's row, then another's, in one transaction.
      await t.db.kysely.transaction().execute(async (trx) => {
        await trx.updateTable('runs').set({ cancel_requested: 0 }).where('id', '=', first).execute();
        renewal = renew();
        // The renewal reaches the row this transaction holds, and waits for its lock.
        await vi.waitFor(
          async () => {
            const { rows } = await sql<{ waiting: number }>`
              select count(*)::int as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
            `.execute(t.db.kysely);
            expect(rows[0].waiting).toBeGreaterThan(0);
          },
          { timeout: 10_000, interval: 10 },
        );
        await trx.updateTable('runs').set({ cancel_requested: 0 }).where('id', '=', second).execute();
      });
      await expect(renewal).resolves.toBeUndefined();
    }
    for (const res of await answers) expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  });
});
