import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { IdempotencyService } from '../../src/idempotency/service.js';
import { ENQUEUE_WAIT_MS } from '../../src/runs/start.js';
import { startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
const clock = new ManualClock();
beforeAll(async () => (t = await startApp({}, { clock })));
afterAll(() => t?.close());

describe('an abandoned Idempotency-Key claim taken over', () => {
  it('is abandoned only after the longest wait of a run start (the app default)', () => {
    expect(t.services.idempotency.abandonedAfterMs).toBeGreaterThan(ENQUEUE_WAIT_MS);
  });

  it("the first request's late record or release does not touch the claim that took over", async () => {
    // The real database and clock of the app; a short abandonment, passed by moving the clock.
    const idempotency = new IdempotencyService({ db: t.db, abandonedAfterMs: 30, clock });
    const { id: tenantId } = await t.tenant();
    const request = { method: 'POST', route: '/x', body: { a: 1 } };

    const first = await idempotency.claim(tenantId, 'late-record', request);
    clock.advance(60);
    const second = await idempotency.claim(tenantId, 'late-record', request);
    expect(second.replay).toBeUndefined();
    await idempotency.record(tenantId, second, { status: 200, runId: 'second-run' });
    await idempotency.record(tenantId, first, { status: 200, runId: 'first-run' });
    expect((await idempotency.claim(tenantId, 'late-record', request)).replay).toMatchObject({ runId: 'second-run' });

    const a = await idempotency.claim(tenantId, 'late-release', request);
    clock.advance(60);
    const b = await idempotency.claim(tenantId, 'late-release', request);
    expect(b.replay).toBeUndefined();
    await idempotency.release(tenantId, a);
    await idempotency.record(tenantId, b, { status: 200, runId: 'b-run' });
    expect((await idempotency.claim(tenantId, 'late-release', request)).replay).toMatchObject({ runId: 'b-run' });
  });
});
