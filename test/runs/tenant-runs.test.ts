import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let key: string;
let otherKey: string;
let first: string;
let second: string;
const runIds: Record<string, string> = {};

/** Starts a run; either answer (the run's JSON, a chat's event stream, a failed run's problem) names it in x-run-id. */
const run = async (agentId: string, kind: 'execute' | 'chat', message: string, k = key) => {
  const params = { path: { id: agentId } };
  const res =
    kind === 'execute'
      ? await t.api(k).POST('/api/v1/agents/{id}/execute', { params, body: { message } })
      : await t.api(k).POST('/api/v1/agents/{id}/chat', { params, body: { message }, parseAs: 'text' });
  const runId = String(res.response.headers.get('x-run-id'));
  expect(runId, JSON.stringify(res.data ?? res.error)).toMatch(/.+/);
  return runId;
};

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
  first = (await t.agent(key, { name: 'First' })).id;
  second = (await t.agent(key, { name: 'Second' })).id;
  runIds.firstExecute = await run(first, 'execute', 'hello');
  runIds.firstFailed = await run(first, 'execute', '/fail boom');
  runIds.secondChat = await run(second, 'chat', 'hi');
  const elsewhere = (await t.agent(otherKey, { name: 'Elsewhere' })).id;
  runIds.otherTenant = await run(elsewhere, 'execute', 'hello', otherKey);
});
afterAll(() => t.close());

const list = async (query: paths['/api/v1/runs']['get']['parameters']['query'] = {}, k = key) => {
  const res = await t.api(k).GET('/api/v1/runs', { params: { query } });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.data!;
};

describe('GET /api/v1/runs', () => {
  it('lists the tenant’s runs across its agents, newest first', async () => {
    const body = await list();
    expect(body).toMatchObject({ total: 3, page: 1, limit: 20 });
    expect(body.runs.map((r) => r.id)).toEqual([runIds.secondChat, runIds.firstFailed, runIds.firstExecute]);
    expect(body.runs[0]).toMatchObject({ agentId: second, kind: 'chat', status: 'completed' });
    expect((await list({}, otherKey)).runs.map((r) => r.id)).toEqual([runIds.otherTenant]);
  });

  it('narrows by status, kind, agent and since', async () => {
    expect((await list({ status: 'failed' })).runs.map((r) => r.id)).toEqual([runIds.firstFailed]);
    expect((await list({ kind: 'chat' })).runs.map((r) => r.id)).toEqual([runIds.secondChat]);
    expect((await list({ agentId: first })).runs.map((r) => r.id)).toEqual([runIds.firstFailed, runIds.firstExecute]);
    expect((await list({ agentId: first, status: 'completed', kind: 'execute' })).runs.map((r) => r.id)).toEqual([runIds.firstExecute]);
    expect((await list({ since: '2999-01-01T00:00:00Z' })).total).toBe(0);
    expect((await list({ since: '2000-01-01T00:00:00+02:00' })).total).toBe(3);
  });

  it('pages', async () => {
    const page2 = await list({ limit: 2, page: 2 });
    expect(page2).toMatchObject({ total: 3, page: 2, limit: 2 });
    expect(page2.runs.map((r) => r.id)).toEqual([runIds.firstExecute]);
  });

  it('refuses bad filters naming them, and needs agents:read', async () => {
    // Values and parameters the types forbid go raw.
    for (const query of ['?status=sleeping', '?kind=nap', '?color=red']) {
      expectProblem(await t.raw('GET', `/api/v1/runs${query}`, { key }), 400, 'validation_failed');
    }
    expectProblem(await t.api(key).GET('/api/v1/runs', { params: { query: { limit: 101 } } }), 400, 'validation_failed');
    const bad = await t.api(key).GET('/api/v1/runs', { params: { query: { since: 'yesterday' } } });
    expectProblem(bad, 400, 'validation_failed');
    expect(JSON.stringify(bad.error)).toContain('since');
    const noRead = await t.key(key, ['skills:read']);
    expectProblem(await t.api(noRead).GET('/api/v1/runs'), 403, 'forbidden');
  });
});

describe('a run’s warnings in the lists', () => {
  it('are in each list’s summary of the run, as in the run itself (the console badges them)', async () => {
    const { key: own } = await t.tenant('warned');
    // Nothing listens on port 1: the MCP server is down, and the run says so instead of failing.
    const down = await t.agent(own, { name: 'Down', tools: [{ type: 'mcp', url: 'http://127.0.0.1:1/mcp' }] });
    const quiet = await t.agent(own, { name: 'Quiet' });
    const warned = await run(down.id, 'execute', 'hello', own);
    const clean = await run(quiet.id, 'execute', 'hello', own);
    const details = (await t.api(own).GET('/api/v1/runs/{runId}', { params: { path: { runId: warned } } })).data!;
    expect(details.warnings).toHaveLength(1);
    expect(details.warnings[0]).toMatch(/^MCP server unavailable: http:\/\/127\.0\.0\.1:1\/mcp/);
    // Tracing is off in this app: no trace to name.
    expect(details.traceId).toBeNull();

    const tenantList = await list({}, own);
    const byId = new Map(tenantList.runs.map((r) => [r.id, r.warnings]));
    expect(byId.get(warned)).toEqual(details.warnings);
    expect(byId.get(clean)).toEqual([]);
    const agentList = await t.api(own).GET('/api/v1/agents/{id}/runs', { params: { path: { id: down.id } } });
    expect(agentList.data!.runs.map((r) => r.warnings)).toEqual([details.warnings]);
  });
});
