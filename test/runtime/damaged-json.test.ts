import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

let t: TestApp;
beforeAll(async () => (t = await startApp()));
afterAll(() => t?.close());

describe('a run whose stored JSON does not fit its schema', () => {
  it('is reported as damage (500), not served', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const res = await execute(t.api(key), agent.id, { message: 'hello' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const runId = res.run!.runId;
    const getRun = () => t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
    expect((await getRun()).response.status).toBe(200);

    await t.db.kysely.updateTable('runs').set({ steps: '{"index":0}' }).where('id', '=', runId).execute();
    expectProblem(await getRun(), 500, 'internal_error');
  });
});
