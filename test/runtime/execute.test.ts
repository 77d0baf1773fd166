import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute as executeAgent, type ExecuteBody } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';

let t: TestApp;
let key: string;
let otherKey: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  // Price the offline model so cost arithmetic is visible: $2 per 1M input, $4 per 1M output tokens.
  t = await startApp({ MODEL_PRICES: JSON.stringify({ 'builtin/echo': { input: 2, output: 4 } }) });
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
  mcp = await startMcpServer();
});
afterAll(async () => {
  await t.close();
  await mcp.close();
});

const execute = (agentId: string, body: ExecuteBody, k = key) => executeAgent(t.api(k), agentId, body);
const getRun = (runId: string, k = key) => t.api(k).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
const getConversation = (id: string) => t.api(key).GET('/api/v1/conversations/{id}', { params: { path: { id } } });
const runsOf = (agentId: string, k = key, query: { limit?: number } = {}) =>
  t.api(k).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId }, query } });

describe('execute', () => {
  it('answers with output, conversation, cost, tokens, duration and stores the run', async () => {
    const a = await t.agent(key, { systemPrompt: 'You are terse.' });
    const res = await execute(a.id, { message: 'hello there' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const answer = res.run!;
    // Input tokens: system prompt (3 words) + message (2); output: 2 words.
    expect(answer).toMatchObject({
      output: 'hello there',
      status: 'completed',
      tokenUsage: { inputTokens: 5, outputTokens: 2 },
      toolCalls: [],
    });
    expect(answer.cost).toBeCloseTo((5 * 2 + 2 * 4) / 1e6, 12);
    expect(answer.duration).toBeGreaterThanOrEqual(0);

    const run = await getRun(answer.runId);
    expect(run.response.status, JSON.stringify(run.error)).toBe(200);
    expect(run.data).toMatchObject({
      id: answer.runId,
      agentId: a.id,
      conversationId: answer.conversationId,
      kind: 'execute',
      status: 'completed',
      model: 'builtin/echo',
      input: 'hello there',
      output: 'hello there',
      error: null,
      cost: answer.cost,
      tokenUsage: { inputTokens: 5, outputTokens: 2 },
    });
    expect(run.data!.steps).toHaveLength(1);
    expect(run.data!.completedAt! >= run.data!.startedAt!).toBe(true);

    const conv = await getConversation(answer.conversationId);
    expect(conv.data).toMatchObject({ agentId: a.id, status: 'active', messageCount: 2, activeRunId: null });
  });

  it('keeps context across calls with conversationId', async () => {
    const a = await t.agent(key);
    const { conversationId } = (await execute(a.id, { message: 'one two three' })).run!;
    const second = await execute(a.id, { message: 'four', conversationId });
    expect(second.response.status, JSON.stringify(second.error)).toBe(200);
    expect(second.run!.conversationId).toBe(conversationId);
    // History (3 + 3 words) plus the new message (1) reaches the model.
    expect(second.run!.tokenUsage.inputTokens).toBe(7);
    const msgs = await t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path: { id: conversationId } } });
    expect(msgs.data!.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'one two three'],
      ['assistant', 'one two three'],
      ['user', 'four'],
      ['assistant', 'four'],
    ]);
  });

  it('bounds history by configuration.memoryWindow', async () => {
    const a = await t.agent(key, { configuration: { memoryWindow: 1 } });
    const first = await execute(a.id, { message: 'alpha beta gamma' });
    const second = await execute(a.id, { message: 'delta', conversationId: first.run!.conversationId });
    expect(second.run!.tokenUsage.inputTokens).toBe(4); // the last message (3 words) + the new one
  });

  it('caps output with maxTokens', async () => {
    const a = await t.agent(key);
    const res = (await execute(a.id, { message: 'a b c d e f g', maxTokens: 3 })).run!;
    expect(res.output).toBe('a b c');
    expect(res.tokenUsage.outputTokens).toBe(3);
  });

  it('refuses paused and registered agents, unknown agents and foreign conversations', async () => {
    const a = await t.agent(key);
    const byId = { params: { path: { id: a.id } } };
    await t.api(key).POST('/api/v1/agents/{id}/pause', byId);
    expectProblem(await execute(a.id, { message: 'hi' }), 409, 'agent_paused');
    expectProblem(await t.api(key).POST('/api/v1/agents/{id}/chat', { ...byId, body: { message: 'hi' } }), 409, 'agent_paused');
    expectProblem(await t.api(key).POST('/api/v1/agents/{id}/stream', { ...byId, body: { message: 'hi' } }), 409, 'agent_paused');
    const ext = await t.agent(key, { hosting: 'external' });
    expectProblem(await execute(ext.id, { message: 'hi' }), 409, 'agent_not_executable');
    expectProblem(await execute('01a00000-0000-7000-8000-000000000000', { message: 'hi' }), 404, 'not_found');
    expectProblem(await execute(a.id, { message: 'hi' }, otherKey), 404, 'not_found');

    const b = await t.agent(key);
    const { conversationId } = (await execute(b.id, { message: 'mine' })).run!;
    const foreign = await t.agent(otherKey, {});
    expectProblem(await execute(foreign.id, { message: 'x', conversationId }, otherKey), 404, 'not_found');
    const c = await t.agent(key);
    expectProblem(await execute(c.id, { message: 'x', conversationId }), 409, 'conversation_agent_mismatch');
  });

  it('validates the body', async () => {
    const a = await t.agent(key);
    // raw: bodies the types forbid (no message; stream not a boolean)
    const raw = (body: unknown) => t.raw('POST', `/api/v1/agents/${a.id}/execute`, { key, body });
    expectProblem(await raw({}), 400, 'validation_failed');
    expectProblem(await execute(a.id, { message: '' }), 400, 'validation_failed');
    expectProblem(await execute(a.id, { message: 'x', maxTokens: 0 }), 400, 'validation_failed');
    expectProblem(await raw({ message: 'x', stream: 'yes' }), 400, 'validation_failed');
    expectProblem(await execute(a.id, { message: 'x', conversationId: 'nope' }), 404, 'not_found');
  });

  it('needs agents:write to execute and agents:read to read runs', async () => {
    const a = await t.agent(key);
    const reader = await t.key(key, ['agents:read']);
    expectProblem(await execute(a.id, { message: 'x' }, reader), 403, 'forbidden');
    expect((await runsOf(a.id, reader)).response.status).toBe(200);
  });

  it('reports a failing model as 502 and leaves the conversation consistent', async () => {
    const a = await t.agent(key);
    const { conversationId } = (await execute(a.id, { message: 'first' })).run!;
    const res = await execute(a.id, { message: '/fail the model is down', conversationId });
    expectProblem(res, 502, 'model_error');
    expect(res.error!.detail).toContain('the model is down');
    const failed = (await runsOf(a.id)).data!.runs[0];
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'model_error', message: 'the model is down' } });
    const conv = await getConversation(conversationId);
    expect(conv.data).toMatchObject({ messageCount: 3, activeRunId: null });
    // The conversation still takes messages.
    expect((await execute(a.id, { message: 'again', conversationId })).run!.output).toBe('again');
  });

  it('fails clearly when a provider is not configured', async () => {
    const a = await t.agent(key, { model: 'openai/gpt-4o-mini' });
    const res = await execute(a.id, { message: 'hi' });
    expectProblem(res, 502, 'model_unavailable');
    expect(res.error!.detail).toContain('OPENAI_API_KEY');
  });
});

describe('tools', () => {
  it('calls tools of an MCP server named in the agent’s tools', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url, headers: { 'x-test': 'yes' } }] });
    const res = await execute(a.id, { message: '/tool add {"a":2,"b":40}' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run!.toolCalls).toEqual([{ name: 'add', input: { a: 2, b: 40 }, result: { sum: 42 } }]);
    expect(res.run!.output).toBe('add returned {"sum":42}');
    expect(mcp.state.headers.some((h) => h['x-test'] === 'yes')).toBe(true);

    const run = (await getRun(res.run!.runId)).data!;
    expect(run.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(run.toolCalls[0]).toMatchObject({ name: 'add', input: { a: 2, b: 40 }, result: { sum: 42 } });
    expect(run.toolCalls[0].completedAt! >= run.toolCalls[0].startedAt).toBe(true);
  });

  it('wraps plain results, prefixes names, filters allowedTools', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url, name: 'ext', allowedTools: ['shout'] }] });
    const res = await execute(a.id, { message: '/tool ext_shout {"text":"hey"}' });
    expect(res.run!.toolCalls[0]).toMatchObject({ name: 'ext_shout', result: { text: 'HEY' } });
    const denied = await execute(a.id, { message: '/tool ext_add {"a":1,"b":1}' });
    expect(denied.run!.toolCalls[0].result).toEqual({ error: { code: 'invalid_tool_call', message: expect.stringContaining('ext_add') } });
  });

  it('gives tool failures back to the model as results', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const res = await execute(a.id, { message: '/tool broken {}' });
    expect(res.response.status).toBe(200);
    expect(res.run!.toolCalls[0].result).toEqual({ error: { code: 'tool_failed', message: 'the broken tool is broken' } });
    expect(res.run!.output).toContain('the broken tool is broken');
  });

  it('times a tool out per configuration.toolTimeoutMs', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }], configuration: { toolTimeoutMs: 200 } });
    const res = (await execute(a.id, { message: '/tool slow {"ms":5000}' })).run!;
    expect(res.toolCalls[0].result).toEqual({ error: { code: 'tool_timeout', message: 'the tool did not answer in time' } });
    expect(res.duration).toBeLessThan(3000);
  });

  it('records a warning when an MCP server is unreachable, and still answers', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: 'http://127.0.0.1:9/mcp' }] });
    const res = (await execute(a.id, { message: 'still here' })).run!;
    expect(res.output).toBe('still here');
    const run = (await getRun(res.runId)).data!;
    expect(run.warnings[0]).toContain('MCP server unavailable: http://127.0.0.1:9/mcp');
  });

  it('runs without tools when enableTools is false', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const before = mcp.state.calls.length;
    const res = (await execute(a.id, { message: '/tool add {"a":1,"b":1}', enableTools: false })).run!;
    expect(res.toolCalls).toEqual([]);
    expect(res.output).toBe('no tools are available to this run');
    expect(mcp.state.calls.length).toBe(before);
  });

  it('stops at configuration.maxSteps', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }], configuration: { maxSteps: 1 } });
    const res = (await execute(a.id, { message: '/tool add {"a":1,"b":2}' })).run!;
    expect(res.toolCalls).toHaveLength(1);
    expect(res.output).toBe('');
    const run = (await getRun(res.runId)).data!;
    expect(run.steps).toHaveLength(1);
  });
});

describe('run history', () => {
  it('pages an agent’s runs newest first, and keeps them after the agent is deleted', async () => {
    const a = await t.agent(key);
    for (const m of ['r1', 'r2', 'r3']) await execute(a.id, { message: m });
    const page = (await runsOf(a.id, key, { limit: 2 })).data!;
    expect(page).toMatchObject({ total: 3, page: 1, limit: 2 });
    expect(page.runs.map((r) => r.output)).toEqual(['r3', 'r2']);
    expect(page.runs[0]).toMatchObject({
      status: 'completed',
      cost: expect.any(Number),
      duration: expect.any(Number),
      tokenUsage: { inputTokens: 1, outputTokens: 1 },
    });
    expectProblem(await runsOf(a.id, key, { limit: 101 }), 400, 'validation_failed');

    await t.api(key).DELETE('/api/v1/agents/{id}', { params: { path: { id: a.id } } });
    const after = await runsOf(a.id);
    expect(after.data!.total).toBe(3);
    const conversationId = page.runs[0].conversationId!;
    const conv = await getConversation(conversationId);
    expect(conv.response.status).toBe(200);
    expectProblem(
      await t.api(key).POST('/api/v1/conversations/{id}/messages', { params: { path: { id: conversationId } }, body: { content: 'hi' } }),
      409,
      'agent_deleted',
    );
  });

  it('hides another tenant’s runs', async () => {
    const a = await t.agent(key);
    const { runId } = (await execute(a.id, { message: 'secret' })).run!;
    expectProblem(await getRun(runId, otherKey), 404, 'not_found');
    expectProblem(await t.api(otherKey).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId } } }), 404, 'not_found');
    // Another tenant's agent is a missing parent: its runs are a 404 like the agent itself (issue 21 item 10).
    expectProblem(await runsOf(a.id, otherKey), 404, 'not_found');
  });
});
