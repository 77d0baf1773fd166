import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialect, startApp, type TestApp } from '../helpers/app.js';

// A process renews the leases of the runs it executes (runs/service.ts renewLeases); a run whose
// lease lapses is declared interrupted by any process. So a renewal must neither miss a run nor fail
// because ends of other runs are being written at the same time.

let t: TestApp;
let key: string;
let agentId: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  const res = await t.request('POST', '/api/v1/agents', { key, body: { name: 'slow', appId: 'app' } });
  agentId = res.body.id;
});
afterAll(() => t.close());

const renew = () => (t.services.runs as unknown as { renewLeases(): Promise<void> }).renewLeases();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts `n` runs that take a while, and answers their ids once all are recorded as running. */
async function slowRuns(n: number) {
  const answers = Array.from({ length: n }, (_, i) =>
    t.request('POST', `/api/v1/agents/${agentId}/execute`, { key, body: { message: `/delay 150\nslow answer number ${i}` } }),
  );
  for (let i = 0; i < 200; i++) {
    const rows = await t.db.kysely
      .selectFrom('runs')
      .select(['id', 'lease_expires_at'])
      .where('status', '=', 'running')
      .orderBy('id')
      .execute();
    if (rows.length === n) return { rows, answers: Promise.all(answers) };
    await sleep(10);
  }
  throw new Error('the runs were never all running');
}

describe('run leases', () => {
  it('renews the lease of every run this process executes', async () => {
    const { rows, answers } = await slowRuns(3);
    await sleep(5);
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
    for (const res of await answers) expect(res.status, res.text).toBe(200);
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
        await sleep(100);
        await trx.updateTable('runs').set({ cancel_requested: 0 }).where('id', '=', second).execute();
      });
      await expect(renewal).resolves.toBeUndefined();
    }
    for (const res of await answers) expect(res.status, res.text).toBe(200);
  });
});
