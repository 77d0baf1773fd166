import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let key: string;
let otherKey: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
});
afterAll(() => t.close());

const create = async (body: Record<string, unknown>, k = key) => {
  const res = await t.request('POST', '/api/v1/agents', { key: k, body: { appId: 'app-1', ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body;
};

describe('create and get', () => {
  it('creates an available agent on the default model', async () => {
    const res = await t.request('POST', '/api/v1/agents', {
      key,
      body: {
        name: 'Support',
        appId: 'support',
        role: 'agent',
        description: 'answers tickets',
        systemPrompt: 'Be kind',
        contextPrompt: 'ACME Inc',
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'Support',
      appId: 'support',
      role: 'agent',
      description: 'answers tickets',
      model: 'builtin/echo',
      status: 'available',
      hosting: 'platform',
      teamId: null,
      systemPrompt: 'Be kind',
      contextPrompt: 'ACME Inc',
    });
    expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
    expect(res.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const got = await t.request('GET', `/api/v1/agents/${res.body.id}`, { key });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
    expect(got.body.tools).toEqual([
      { type: 'builtin', name: 'skills' },
      { type: 'builtin', name: 'connectors' },
    ]);
    expect(got.body.configuration).toEqual({
      temperature: null,
      maxSteps: 10,
      maxTokens: null,
      memoryWindow: 50,
      onActiveRun: 'reject',
      toolTimeoutMs: 60000,
      summaryModel: null,
      fallbackModels: [],
      publicAgentCard: true,
    });
  });

  it('takes tools and configuration', async () => {
    const helper = await create({ name: 'helper' });
    const agent = await create({
      name: 'lead',
      model: 'openai/gpt-4o-mini',
      tools: [
        { type: 'mcp', url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer x' }, name: 'ex' },
        { type: 'agent', agentId: helper.id, name: 'ask_helper' },
      ],
      configuration: { temperature: 0.2, maxSteps: 4 },
    });
    expect(agent.model).toBe('openai/gpt-4o-mini');
    expect(agent.tools).toHaveLength(2);
    expect(agent.configuration).toMatchObject({ temperature: 0.2, maxSteps: 4, memoryWindow: 50 });
  });

  it('validates the model identifier', async () => {
    for (const model of ['gpt-4o', 'foo/bar', 'builtin/parrot', 'openai/']) {
      const res = await t.request('POST', '/api/v1/agents', { key, body: { name: 'm', appId: 'a', model } });
      expectProblem(res, 400, 'validation_failed');
    }
  });

  it('validates tools: shapes, and delegation only to agents of the tenant', async () => {
    expectProblem(
      await t.request('POST', '/api/v1/agents', { key, body: { name: 'x', appId: 'a', tools: [{ type: 'mcp', url: 'ftp://x' }] } }),
      400,
      'validation_failed',
    );
    expectProblem(
      await t.request('POST', '/api/v1/agents', { key, body: { name: 'x', appId: 'a', tools: [{ type: 'shell' }] } }),
      400,
      'validation_failed',
    );
    const foreign = await create({ name: 'foreign' }, otherKey);
    const res = await t.request('POST', '/api/v1/agents', {
      key,
      body: { name: 'x', appId: 'a', tools: [{ type: 'agent', agentId: foreign.id }] },
    });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors).toEqual([{ path: 'body.tools.0.agentId', message: 'names no agent in this tenant' }]);
  });

  it('requires name and appId', async () => {
    const res = await t.request('POST', '/api/v1/agents', { key, body: {} });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['body.appId', 'body.name']);
  });

  it('registers an externally hosted agent', async () => {
    const agent = await create({ name: 'ext', hosting: 'external' });
    expect(agent).toMatchObject({ status: 'registered', hosting: 'external' });
    // CONTRACT.md: a registered agent is never made available (it can be paused and resumed; test/identity/agent-lifecycle.test.ts).
    expectProblem(
      await t.request('POST', `/api/v1/agents/${agent.id}`, { key, body: { status: 'available' } }),
      409,
      'agent_not_executable',
    );
    expectProblem(await t.request('POST', `/api/v1/agents/${agent.id}/resume`, { key }), 409, 'agent_not_paused');
  });

  it('answers 404 for an unknown id and for another tenant’s agent', async () => {
    const mine = await create({ name: 'mine' });
    expectProblem(await t.request('GET', '/api/v1/agents/01a00000-0000-7000-8000-000000000000', { key }), 404, 'not_found');
    for (const [method, path, body] of [
      ['GET', `/api/v1/agents/${mine.id}`, undefined],
      ['POST', `/api/v1/agents/${mine.id}`, { name: 'stolen' }],
      ['DELETE', `/api/v1/agents/${mine.id}`, undefined],
      ['POST', `/api/v1/agents/${mine.id}/pause`, undefined],
      ['POST', `/api/v1/agents/${mine.id}/resume`, undefined],
      ['POST', `/api/v1/agents/${mine.id}/duplicate`, undefined],
    ] as const) {
      expectProblem(await t.request(method, path, { key: otherKey, body }), 404, 'not_found');
    }
    const still = await t.request('GET', `/api/v1/agents/${mine.id}`, { key });
    expect(still.body).toMatchObject({ name: 'mine', status: 'available' });
  });
});

describe('list', () => {
  it('filters by app, team and status and pages newest first', async () => {
    const { key: k } = await t.tenant('lister');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await create({ name: `a${i}`, appId: i < 3 ? 'one' : 'two', teamId: i % 2 ? 'odd' : 'even' }, k);
      ids.push(a.id);
    }
    await t.request('POST', `/api/v1/agents/${ids[0]}/pause`, { key: k });

    const all = await t.request('GET', '/api/v1/agents', { key: k });
    expect(all.body).toMatchObject({ total: 5, page: 1, limit: 20 });
    expect(all.body.agents.map((a: { id: string }) => a.id)).toEqual([...ids].reverse());
    expect(Object.keys(all.body.agents[0]).sort()).toEqual(
      ['appId', 'createdAt', 'description', 'hosting', 'id', 'model', 'name', 'role', 'status', 'teamId'].sort(),
    );

    const one = await t.request('GET', '/api/v1/agents?appId=one', { key: k });
    expect(one.body.total).toBe(3);
    const odd = await t.request('GET', '/api/v1/agents?teamId=odd&appId=two', { key: k });
    expect(odd.body.agents.map((a: { name: string }) => a.name)).toEqual(['a3']);
    const paused = await t.request('GET', '/api/v1/agents?status=paused', { key: k });
    expect(paused.body.agents.map((a: { id: string }) => a.id)).toEqual([ids[0]]);
    expectProblem(await t.request('GET', '/api/v1/agents?status=sleeping', { key: k }), 400, 'validation_failed');

    const page2 = await t.request('GET', '/api/v1/agents?limit=2&page=2', { key: k });
    expect(page2.body.agents.map((a: { id: string }) => a.id)).toEqual([ids[2], ids[1]]);
    expect(page2.body).toMatchObject({ total: 5, page: 2, limit: 2 });
    const past = await t.request('GET', '/api/v1/agents?limit=2&page=9', { key: k });
    expect(past.body.agents).toEqual([]);

    const apps = await t.request('GET', '/api/v1/apps', { key: k });
    expect(apps.body).toEqual({
      apps: [
        { id: 'one', agentCount: 3 },
        { id: 'two', agentCount: 2 },
      ],
      total: 2,
    });
  });

  it('never lists another tenant’s agents', async () => {
    const { key: k } = await t.tenant('empty');
    const res = await t.request('GET', '/api/v1/agents', { key: k });
    expect(res.body).toMatchObject({ agents: [], total: 0 });
  });
});

describe('update', () => {
  it('changes only the fields given', async () => {
    const agent = await create({ name: 'orig', role: 'r', systemPrompt: 'sp', configuration: { maxSteps: 3 } });
    const res = await t.request('POST', `/api/v1/agents/${agent.id}`, {
      key,
      body: { name: 'renamed', configuration: { temperature: 1 } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'renamed', role: 'r', systemPrompt: 'sp', configuration: { maxSteps: 3, temperature: 1 } });
    expect(res.body.updatedAt >= agent.updatedAt).toBe(true);
    const got = await t.request('GET', `/api/v1/agents/${agent.id}`, { key });
    expect(got.body).toEqual(res.body);

    const cleared = await t.request('POST', `/api/v1/agents/${agent.id}`, {
      key,
      body: { role: null, configuration: { temperature: null } },
    });
    expect(cleared.body.role).toBeNull();
    expect(cleared.body.configuration.temperature).toBeNull();
  });

  it('sets status only to available or paused', async () => {
    const agent = await create({ name: 's' });
    const paused = await t.request('POST', `/api/v1/agents/${agent.id}`, { key, body: { status: 'paused' } });
    expect(paused.body.status).toBe('paused');
    expectProblem(await t.request('POST', `/api/v1/agents/${agent.id}`, { key, body: { status: 'registered' } }), 400, 'validation_failed');
    const back = await t.request('POST', `/api/v1/agents/${agent.id}`, { key, body: { status: 'available' } });
    expect(back.body.status).toBe('available');
  });

  it('rejects bad input without changing anything', async () => {
    const agent = await create({ name: 'keep' });
    expectProblem(
      await t.request('POST', `/api/v1/agents/${agent.id}`, { key, body: { name: 'new', model: 'nope' } }),
      400,
      'validation_failed',
    );
    expectProblem(
      await t.request('POST', `/api/v1/agents/${agent.id}`, { key, body: { name: 'new', tools: [{ type: 'agent', agentId: agent.id }] } }),
      400,
      'validation_failed',
    );
    const got = await t.request('GET', `/api/v1/agents/${agent.id}`, { key });
    expect(got.body.name).toBe('keep');
  });
});

describe('pause, resume, duplicate, delete', () => {
  it('pauses and resumes with 409 on the wrong state', async () => {
    const agent = await create({ name: 'p' });
    expectProblem(await t.request('POST', `/api/v1/agents/${agent.id}/resume`, { key }), 409, 'agent_not_paused');
    const paused = await t.request('POST', `/api/v1/agents/${agent.id}/pause`, { key });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ id: agent.id, status: 'paused' });
    expectProblem(await t.request('POST', `/api/v1/agents/${agent.id}/pause`, { key }), 409, 'agent_already_paused');
    const resumed = await t.request('POST', `/api/v1/agents/${agent.id}/resume`, { key });
    expect(resumed.body.status).toBe('available');
  });

  it('duplicates prompts, tools and configuration under a new id', async () => {
    const agent = await create({
      name: 'orig',
      systemPrompt: 'S',
      contextPrompt: 'C',
      tools: [{ type: 'mcp', url: 'https://x.example/mcp' }],
      configuration: { maxSteps: 7 },
    });
    await t.request('POST', `/api/v1/agents/${agent.id}/pause`, { key });
    const dup = await t.request('POST', `/api/v1/agents/${agent.id}/duplicate`, { key });
    expect(dup.status).toBe(201);
    expect(dup.body.id).not.toBe(agent.id);
    expect(dup.body).toMatchObject({
      name: 'orig (copy)',
      systemPrompt: 'S',
      contextPrompt: 'C',
      tools: agent.tools,
      configuration: agent.configuration,
      status: 'available',
    });
    const named = await t.request('POST', `/api/v1/agents/${agent.id}/duplicate`, { key, body: { name: 'Second' } });
    expect(named.body.name).toBe('Second');
    expectProblem(await t.request('POST', `/api/v1/agents/${agent.id}/duplicate`, { key, body: { name: '' } }), 400, 'validation_failed');
  });

  it('deletes with 204; then 404; audit stays', async () => {
    const agent = await create({ name: 'gone' });
    const del = await t.request('DELETE', `/api/v1/agents/${agent.id}`, { key });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expectProblem(await t.request('GET', `/api/v1/agents/${agent.id}`, { key }), 404, 'not_found');
    expectProblem(await t.request('DELETE', `/api/v1/agents/${agent.id}`, { key }), 404, 'not_found');
    const audit = await t.request('GET', `/api/v1/audit-events?resourceId=${agent.id}`, { key });
    expect(audit.body.events.map((e: { action: string }) => e.action)).toEqual(['agent.deleted', 'agent.created']);
  });
});
