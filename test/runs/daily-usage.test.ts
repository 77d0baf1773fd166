import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute as executeOn } from '../helpers/execute.js';

// builtin/echo priced so each run costs something: a run's tokens are words, USD per million tokens.
const PRICE = { input: 2_000, output: 4_000 };

let t: TestApp;
beforeAll(async () => {
  t = await startApp({ MODEL_PRICES: JSON.stringify({ 'builtin/echo': PRICE }) });
});
afterAll(() => t?.close());

const today = () => new Date().toISOString().slice(0, 10);

async function execute(key: string, agentId: string, message: string) {
  const res = await executeOn(t.api(key), agentId, { message });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.run!;
}
const usage = (key: string | null, query: paths['/api/v1/usage/daily']['get']['parameters']['query'] = {}) =>
  t.api(key).GET('/api/v1/usage/daily', { params: { query } });

describe('GET /api/v1/usage/daily', () => {
  it("sums the tenant's runs per day, agent, model and status, and nothing of another tenant", async () => {
    const { key } = await t.tenant();
    const other = await t.tenant();
    const a = await t.agent(key, { name: 'a' });
    const b = await t.agent(key, { name: 'b' });
    const first = await execute(key, a.id, 'one two three');
    const second = await execute(key, a.id, 'four five');
    const third = await execute(key, b.id, 'six');
    await execute(other.key, (await t.agent(other.key)).id, 'not counted here');

    const res = await usage(key);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.to).toBe(today());
    expect(res.data!.rows).toHaveLength(2);
    const rowOf = (agentId: string) => res.data!.rows.find((r) => r.agentId === agentId)!;
    const ofA = rowOf(a.id);
    expect(ofA).toMatchObject({ day: today(), model: 'builtin/echo', status: 'completed', runs: 2 });
    expect(ofA.costUsd).toBeCloseTo(first.cost + second.cost, 10);
    expect(ofA.costUsd).toBeGreaterThan(0);
    expect(ofA.inputTokens).toBe(first.tokenUsage.inputTokens + second.tokenUsage.inputTokens);
    expect(ofA.outputTokens).toBe(first.tokenUsage.outputTokens + second.tokenUsage.outputTokens);
    expect(rowOf(b.id)).toMatchObject({ runs: 1, outputTokens: third.tokenUsage.outputTokens });
    expect(rowOf(b.id).costUsd).toBeCloseTo(third.cost, 10);
  });

  it('counts only the days asked for', async () => {
    const { key } = await t.tenant();
    await execute(key, (await t.agent(key)).id, 'hello');
    const res = await usage(key, { from: '2020-01-01', to: '2020-01-31' });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual({ from: '2020-01-01', to: '2020-01-31', rows: [] });
  });

  it('refuses a malformed or too long period, naming the field', async () => {
    const { key } = await t.tenant();
    const bad = await usage(key, { from: 'yesterday' });
    expectProblem(bad, 400, 'validation_failed');
    expect(JSON.stringify(bad.error!.errors)).toContain('from');
    const reversed = await usage(key, { from: '2026-02-01', to: '2026-01-01' });
    expectProblem(reversed, 400, 'validation_failed');
    expect(reversed.error!.errors![0].path).toBe('from');
    const long = await usage(key, { from: '2020-01-01', to: '2026-01-01' });
    expectProblem(long, 400, 'validation_failed');
  });

  it('needs agents:read', async () => {
    const { key } = await t.tenant();
    const limited = await t.key(key, ['skills:read']);
    expectProblem(await usage(limited), 403, 'forbidden');
    expectProblem(await usage(null), 401, 'missing_credentials');
  });
});
