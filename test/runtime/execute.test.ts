import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
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

const execute = (agentId: string, body: Record<string, unknown>, k = key) =>
  t.request('POST', `/api/v1/agents/${agentId}/execute`, { key: k, body });

describe('execute', () => {
  it('answers with output, conversation, cost, tokens, duration and stores the run', async () => {
    const a = await t.agent(key, { systemPrompt: 'You are terse.' });
    const res = await execute(a.id, { message: 'hello there' });
    expect(res.status, res.text).toBe(200);
    // Input tokens: system prompt (3 words) + message (2); output: 2 words.
    expect(res.body).toMatchObject({
      output: 'hello there',
      status: 'completed',
      tokenUsage: { inputTokens: 5, outputTokens: 2 },
      toolCalls: [],
    });
    expect(res.body.cost).toBeCloseTo((5 * 2 + 2 * 4) / 1e6, 12);
    expect(res.body.duration).toBeGreaterThanOrEqual(0);

    const run = await t.request('GET', `/api/v1/runs/${res.body.runId}`, { key });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({
      id: res.body.runId,
      agentId: a.id,
      conversationId: res.body.conversationId,
      kind: 'execute',
      status: 'completed',
      model: 'builtin/echo',
      input: 'hello there',
      output: 'hello there',
      error: null,
      cost: res.body.cost,
      tokenUsage: { inputTokens: 5, outputTokens: 2 },
    });
    expect(run.body.steps).toHaveLength(1);
    expect(run.body.completedAt >= run.body.startedAt).toBe(true);

    const conv = await t.request('GET', `/api/v1/conversations/${res.body.conversationId}`, { key });
    expect(conv.body).toMatchObject({ agentId: a.id, status: 'active', messageCount: 2, activeRunId: null });
  });

  it('keeps context across calls with conversationId', async () => {
    const a = await t.agent(key);
    const first = await execute(a.id, { message: 'one two three' });
    const second = await execute(a.id, { message: 'four', conversationId: first.body.conversationId });
    expect(second.status).toBe(200);
    expect(second.body.conversationId).toBe(first.body.conversationId);
    // History (3 + 3 words) plus the new message (1) reaches the model.
    expect(second.body.tokenUsage.inputTokens).toBe(7);
    const msgs = await t.request('GET', `/api/v1/conversations/${first.body.conversationId}/messages`, { key });
    expect(msgs.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'one two three'],
      ['assistant', 'one two three'],
      ['user', 'four'],
      ['assistant', 'four'],
    ]);
  });

  it('bounds history by configuration.memoryWindow', async () => {
    const a = await t.agent(key, { configuration: { memoryWindow: 1 } });
    const first = await execute(a.id, { message: 'alpha beta gamma' });
    const second = await execute(a.id, { message: 'delta', conversationId: first.body.conversationId });
    expect(second.body.tokenUsage.inputTokens).toBe(4); // the last message (3 words) + the new one
  });

  it('caps output with maxTokens', async () => {
    const a = await t.agent(key);
    const res = await execute(a.id, { message: 'a b c d e f g', maxTokens: 3 });
    expect(res.body.output).toBe('a b c');
    expect(res.body.tokenUsage.outputTokens).toBe(3);
  });

  it('refuses paused and registered agents, unknown agents and foreign conversations', async () => {
    const a = await t.agent(key);
    await t.request('POST', `/api/v1/agents/${a.id}/pause`, { key });
    expectProblem(await execute(a.id, { message: 'hi' }), 409, 'agent_paused');
    for (const path of ['chat', 'stream']) {
      expectProblem(await t.request('POST', `/api/v1/agents/${a.id}/${path}`, { key, body: { message: 'hi' } }), 409, 'agent_paused');
    }
    const ext = await t.agent(key, { hosting: 'external' });
    expectProblem(await execute(ext.id, { message: 'hi' }), 409, 'agent_not_executable');
    expectProblem(await execute('01a00000-0000-7000-8000-000000000000', { message: 'hi' }), 404, 'not_found');
    expectProblem(await execute(a.id, { message: 'hi' }, otherKey), 404, 'not_found');

    const b = await t.agent(key);
    const conv = await execute(b.id, { message: 'mine' });
    const foreign = await t.agent(otherKey, {});
    expectProblem(await execute(foreign.id, { message: 'x', conversationId: conv.body.conversationId }, otherKey), 404, 'not_found');
    const c = await t.agent(key);
    expectProblem(await execute(c.id, { message: 'x', conversationId: conv.body.conversationId }), 409, 'conversation_agent_mismatch');
  });

  it('validates the body', async () => {
    const a = await t.agent(key);
    expectProblem(await execute(a.id, {}), 400, 'validation_failed');
    expectProblem(await execute(a.id, { message: '' }), 400, 'validation_failed');
    expectProblem(await execute(a.id, { message: 'x', maxTokens: 0 }), 400, 'validation_failed');
    expectProblem(await execute(a.id, { message: 'x', stream: 'yes' }), 400, 'validation_failed');
    expectProblem(await execute(a.id, { message: 'x', conversationId: 'nope' }), 404, 'not_found');
  });

  it('needs agents:write to execute and agents:read to read runs', async () => {
    const a = await t.agent(key);
    const reader = await t.request('POST', '/api/v1/api-keys', { key, body: { name: 'r', permissions: ['agents:read'] } });
    expectProblem(await execute(a.id, { message: 'x' }, reader.body.key), 403, 'forbidden');
    expect((await t.request('GET', `/api/v1/agents/${a.id}/runs`, { key: reader.body.key })).status).toBe(200);
  });

  it('reports a failing model as 502 and leaves the conversation consistent', async () => {
    const a = await t.agent(key);
    const ok = await execute(a.id, { message: 'first' });
    const res = await execute(a.id, { message: '/fail the model is down', conversationId: ok.body.conversationId });
    expectProblem(res, 502, 'model_error');
    expect(res.body.detail).toContain('the model is down');
    const runs = await t.request('GET', `/api/v1/agents/${a.id}/runs`, { key });
    const failed = runs.body.runs[0];
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'model_error', message: 'the model is down' } });
    const conv = await t.request('GET', `/api/v1/conversations/${ok.body.conversationId}`, { key });
    expect(conv.body).toMatchObject({ messageCount: 3, activeRunId: null });
    // The conversation still takes messages.
    expect((await execute(a.id, { message: 'again', conversationId: ok.body.conversationId })).body.output).toBe('again');
  });

  it('fails clearly when a provider is not configured', async () => {
    const a = await t.agent(key, { model: 'openai/gpt-4o-mini' });
    const res = await execute(a.id, { message: 'hi' });
    expectProblem(res, 502, 'model_unavailable');
    expect(res.body.detail).toContain('OPENAI_API_KEY');
  });
});

describe('tools', () => {
  it('calls tools of an MCP server named in the agent’s tools', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url, headers: { 'x-test': 'yes' } }] });
    const res = await execute(a.id, { message: '/tool add {"a":2,"b":40}' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.toolCalls).toEqual([{ name: 'add', input: { a: 2, b: 40 }, result: { sum: 42 } }]);
    expect(res.body.output).toBe('add returned {"sum":42}');
    expect(mcp.state.headers.some((h) => h['x-test'] === 'yes')).toBe(true);

    const run = await t.request('GET', `/api/v1/runs/${res.body.runId}`, { key });
    expect(run.body.steps.map((s: { finishReason: string }) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(run.body.toolCalls[0]).toMatchObject({ name: 'add', input: { a: 2, b: 40 }, result: { sum: 42 } });
    expect(run.body.toolCalls[0].completedAt >= run.body.toolCalls[0].startedAt).toBe(true);
  });

  it('wraps plain results, prefixes names, filters allowedTools', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url, name: 'ext', allowedTools: ['shout'] }] });
    const res = await execute(a.id, { message: '/tool ext_shout {"text":"hey"}' });
    expect(res.body.toolCalls[0]).toMatchObject({ name: 'ext_shout', result: { text: 'HEY' } });
    const denied = await execute(a.id, { message: '/tool ext_add {"a":1,"b":1}' });
    expect(denied.body.toolCalls[0].result).toEqual({ error: { code: 'invalid_tool_call', message: expect.stringContaining('ext_add') } });
  });

  it('gives tool failures back to the model as results', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const res = await execute(a.id, { message: '/tool broken {}' });
    expect(res.status).toBe(200);
    expect(res.body.toolCalls[0].result).toEqual({ error: { code: 'tool_failed', message: 'the broken tool is broken' } });
    expect(res.body.output).toContain('the broken tool is broken');
  });

  it('times a tool out per configuration.toolTimeoutMs', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }], configuration: { toolTimeoutMs: 200 } });
    const res = await execute(a.id, { message: '/tool slow {"ms":5000}' });
    expect(res.body.toolCalls[0].result).toEqual({ error: { code: 'tool_timeout', message: 'the tool did not answer in time' } });
    expect(res.body.duration).toBeLessThan(3000);
  });

  it('records a warning when an MCP server is unreachable, and still answers', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: 'http://127.0.0.1:9/mcp' }] });
    const res = await execute(a.id, { message: 'still here' });
    expect(res.body.output).toBe('still here');
    const run = await t.request('GET', `/api/v1/runs/${res.body.runId}`, { key });
    expect(run.body.warnings[0]).toContain('MCP server unavailable: http://127.0.0.1:9/mcp');
  });

  it('runs without tools when enableTools is false', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const before = mcp.state.calls.length;
    const res = await execute(a.id, { message: '/tool add {"a":1,"b":1}', enableTools: false });
    expect(res.body.toolCalls).toEqual([]);
    expect(res.body.output).toBe('no tools are available to this run');
    expect(mcp.state.calls.length).toBe(before);
  });

  it('stops at configuration.maxSteps', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }], configuration: { maxSteps: 1 } });
    const res = await execute(a.id, { message: '/tool add {"a":1,"b":2}' });
    expect(res.body.toolCalls).toHaveLength(1);
    expect(res.body.output).toBe('');
    const run = await t.request('GET', `/api/v1/runs/${res.body.runId}`, { key });
    expect(run.body.steps).toHaveLength(1);
  });
});

describe('run history', () => {
  it('pages an agent’s runs newest first, and keeps them after the agent is deleted', async () => {
    const a = await t.agent(key);
    for (const m of ['r1', 'r2', 'r3']) await execute(a.id, { message: m });
    const page = await t.request('GET', `/api/v1/agents/${a.id}/runs?limit=2`, { key });
    expect(page.body).toMatchObject({ total: 3, page: 1, limit: 2 });
    expect(page.body.runs.map((r: { output: string }) => r.output)).toEqual(['r3', 'r2']);
    expect(page.body.runs[0]).toMatchObject({
      status: 'completed',
      cost: expect.any(Number),
      duration: expect.any(Number),
      tokenUsage: { inputTokens: 1, outputTokens: 1 },
    });
    expectProblem(await t.request('GET', `/api/v1/agents/${a.id}/runs?limit=101`, { key }), 400, 'validation_failed');

    await t.request('DELETE', `/api/v1/agents/${a.id}`, { key });
    const after = await t.request('GET', `/api/v1/agents/${a.id}/runs`, { key });
    expect(after.body.total).toBe(3);
    const conv = await t.request('GET', `/api/v1/conversations/${page.body.runs[0].conversationId}`, { key });
    expect(conv.status).toBe(200);
    expectProblem(
      await t.request('POST', `/api/v1/conversations/${page.body.runs[0].conversationId}/messages`, { key, body: { content: 'hi' } }),
      409,
      'agent_deleted',
    );
  });

  it('hides another tenant’s runs', async () => {
    const a = await t.agent(key);
    const res = await execute(a.id, { message: 'secret' });
    expectProblem(await t.request('GET', `/api/v1/runs/${res.body.runId}`, { key: otherKey }), 404, 'not_found');
    expectProblem(await t.request('POST', `/api/v1/runs/${res.body.runId}/cancel`, { key: otherKey }), 404, 'not_found');
    // Another tenant's agent is a missing parent: its runs are a 404 like the agent itself (issue 21 item 10).
    expectProblem(await t.request('GET', `/api/v1/agents/${a.id}/runs`, { key: otherKey }), 404, 'not_found');
  });
});
