import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => (t = await startApp()));
afterAll(() => t?.close());

describe('tenancy JSON that does not fit its schema', () => {
  it('a tenant’s stored limits are reported as damage (500), not applied', async () => {
    const { id, key } = await t.tenant();
    await t.db.kysely.updateTable('tenants').set({ settings: '{"limits":{"maxConcurrentRuns":"many"}}' }).where('id', '=', id).execute();
    expectProblem(await t.api(key).GET('/api/v1/limits'), 500, 'internal_error');

    await t.db.kysely
      .updateTable('tenants')
      .set({ settings: '{"tbacMode":"audit","limits":{"maxConcurrentRuns":2}}' })
      .where('id', '=', id)
      .execute();
    const limits = await t.api(key).GET('/api/v1/limits');
    expect(limits.response.status, JSON.stringify(limits.error)).toBe(200);
    expect(limits.data).toMatchObject({ maxConcurrentRuns: 2, rateLimitPerMinute: null });
  });

  it('an audit event’s stored detail is reported as damage (500), not served', async () => {
    const { id, key } = await t.tenant();
    await t.agent(key);
    const events = () => t.api(key).GET('/api/v1/audit-events');
    expect((await events()).response.status).toBe(200);
    await t.db.kysely.updateTable('audit_events').set({ detail: '"text"' }).where('tenant_id', '=', id).execute();
    expectProblem(await events(), 500, 'internal_error');
  });
});
