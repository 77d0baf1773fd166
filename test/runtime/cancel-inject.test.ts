import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse } from '../helpers/sse.js';

let t: TestApp;
let key: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  await t.listen();
  mcp = await startMcpServer();
});
afterAll(async () => {
  await t.close();
  await mcp.close();
});

/** Starts a streamed run and returns once its first event arrived, with the stream still open. */
async function startStream(agentId: string, message: string, conversationId?: string) {
  const res = await t.fetch(`/api/v1/agents/${agentId}/stream`, key, { body: { message, conversationId } });
  const events = readSse(res);
  let runId: string | undefined;
  for (let i = 0; i < 100 && !runId; i++) {
    const runs = await t.request('GET', `/api/v1/agents/${agentId}/runs`, { key });
    runId = runs.body.runs.find((r: { status: string }) => r.status === 'running')?.id;
    if (!runId) await new Promise((r) => setTimeout(r, 20));
  }
  const run = await t.request('GET', `/api/v1/runs/${runId}`, { key });
  return { runId: runId!, conversationId: run.body.conversationId as string, events };
}

describe('cancel', () => {
  it('aborts a slow tool at once, keeps partial output, ends cancelled exactly once', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const { runId, events } = await startStream(a.id, '/tool slow {"ms":10000}');
    // Wait until the tool is in flight.
    for (let i = 0; i < 100 && !mcp.state.calls.some((c) => c.name === 'slow'); i++) await new Promise((r) => setTimeout(r, 20));
    const started = Date.now();
    const res = await t.request('POST', `/api/v1/runs/${runId}/cancel`, { key });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: runId, status: 'cancelled', error: { code: 'cancelled' } });
    expect(res.body.toolCalls[0].result).toEqual({ error: { code: 'cancelled', message: 'the run was cancelled' } });
    const streamed = await events;
    expect(streamed.map((e) => e.event)).toEqual(['tool_call_start', 'tool_call_end', 'error']);
    expect(streamed.at(-1)!.data).toEqual({ code: 'cancelled', message: 'the run was cancelled' });
    expectProblem(await t.request('POST', `/api/v1/runs/${runId}/cancel`, { key }), 409, 'run_not_active');
  });

  it('stops a streaming answer and keeps what was said', async () => {
    const a = await t.agent(key);
    const { runId, conversationId, events } = await startStream(a.id, '/delay 50\none two three four five six seven eight nine ten');
    await new Promise((r) => setTimeout(r, 180));
    const res = await t.request('POST', `/api/v1/runs/${runId}/cancel`, { key });
    expect(res.body.status).toBe('cancelled');
    const partial: string = res.body.output;
    expect(partial.length).toBeGreaterThan(0);
    expect('one two three four five six seven eight nine ten'.startsWith(partial)).toBe(true);
    expect(partial).not.toBe('one two three four five six seven eight nine ten');
    const streamed = await events;
    expect(
      streamed
        .filter((e) => e.event === 'token')
        .map((e) => e.data.text)
        .join(''),
    ).toBe(partial);
    // The partial reply is in the conversation, which is free again.
    const msgs = await t.request('GET', `/api/v1/conversations/${conversationId}/messages`, { key });
    expect(msgs.body.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(msgs.body.messages[1].content).toBe(partial);
    const next = await t.request('POST', `/api/v1/conversations/${conversationId}/messages`, { key, body: { content: 'and now?' } });
    expect(next.body.message.content).toBe('and now?');
  });
});

describe('inject', () => {
  it('delivers a message at the next step boundary of the running answer', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const slowCalls = () => mcp.state.calls.filter((c) => c.name === 'slow').length;
    const before = slowCalls();
    const { runId, conversationId, events } = await startStream(a.id, '/tool slow {"ms":400}');
    // Inject while the tool runs, so the message waits for the next step.
    for (let i = 0; i < 100 && slowCalls() === before; i++) await new Promise((r) => setTimeout(r, 10));
    const res = await t.request('POST', `/api/v1/conversations/${conversationId}/inject`, { key, body: { content: 'also this' } });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ messageId: expect.any(String), runId });
    const streamed = await events;
    expect(streamed.at(-1)!.event).toBe('done');
    const run = await t.request('GET', `/api/v1/runs/${runId}`, { key });
    // Step 2 received the injected message; echo answers the newest user message.
    expect(run.body.steps[1].injected).toEqual(['also this']);
    expect(run.body.output).toBe('also this');
    const msgs = await t.request('GET', `/api/v1/conversations/${conversationId}/messages`, { key });
    expect(msgs.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', '/tool slow {"ms":400}'],
      ['user', 'also this'],
      ['assistant', 'also this'],
    ]);
  });

  it('gives a message injected during the final step its own turn', async () => {
    const a = await t.agent(key);
    const { runId, conversationId, events } = await startStream(a.id, '/delay 60\nslow words here');
    await new Promise((r) => setTimeout(r, 70));
    await t.request('POST', `/api/v1/conversations/${conversationId}/inject`, { key, body: { content: 'late news' } });
    await events;
    const run = await t.request('GET', `/api/v1/runs/${runId}`, { key });
    expect(run.body.steps).toHaveLength(2);
    expect(run.body.steps[1].injected).toEqual(['late news']);
    expect(run.body.output).toBe('slow words herelate news');
  });

  it('answers 409 no_active_run when nothing is running', async () => {
    const a = await t.agent(key);
    const conv = await t.request('POST', '/api/v1/conversations', { key, body: { agentId: a.id } });
    expectProblem(
      await t.request('POST', `/api/v1/conversations/${conv.body.id}/inject`, { key, body: { content: 'x' } }),
      409,
      'no_active_run',
    );
    expectProblem(await t.request('POST', `/api/v1/conversations/${conv.body.id}/inject`, { key, body: {} }), 400, 'validation_failed');
    expectProblem(
      await t.request('POST', '/api/v1/conversations/01a00000-0000-7000-8000-000000000000/inject', { key, body: { content: 'x' } }),
      404,
      'not_found',
    );
  });
});

describe('a second message while the agent answers (onActiveRun)', () => {
  it('rejects by default with 409 conversation_busy', async () => {
    const a = await t.agent(key);
    const { conversationId, events } = await startStream(a.id, '/delay 40\na b c d e');
    const res = await t.request('POST', `/api/v1/conversations/${conversationId}/messages`, { key, body: { content: 'wait' } });
    expectProblem(res, 409, 'conversation_busy');
    await events;
  });

  it('enqueues: the message runs after the current answer', async () => {
    const a = await t.agent(key, { configuration: { onActiveRun: 'enqueue' } });
    const { conversationId, events } = await startStream(a.id, '/delay 30\na b c d');
    const res = await t.request('POST', `/api/v1/conversations/${conversationId}/messages`, { key, body: { content: 'queued one' } });
    expect(res.status).toBe(200);
    expect(res.body.message).toMatchObject({ role: 'assistant', content: 'queued one' });
    await events;
    const msgs = await t.request('GET', `/api/v1/conversations/${conversationId}/messages`, { key });
    expect(msgs.body.messages.map((m: { content: string }) => m.content)).toEqual([
      '/delay 30\na b c d',
      'a b c d',
      'queued one',
      'queued one',
    ]);
  });

  it('injects when asked per message', async () => {
    const a = await t.agent(key);
    const { runId, conversationId, events } = await startStream(a.id, '/delay 40\na b c d e');
    const res = await t.request('POST', `/api/v1/conversations/${conversationId}/messages`, {
      key,
      body: { content: 'btw', onActiveRun: 'inject' },
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ injected: true, runId, conversationId });
    await events;
  });

  it('refuses to inject a message with a responseFormat (409): the running answer has no shape to give it', async () => {
    const a = await t.agent(key);
    const { conversationId, events } = await startStream(a.id, '/delay 40\na b c d e');
    const responseFormat = { type: 'json_schema', schema: { type: 'object' } };
    const res = await t.request('POST', `/api/v1/conversations/${conversationId}/messages`, {
      key,
      body: { content: '{"a": 1}', onActiveRun: 'inject', responseFormat },
    });
    expectProblem(res, 409, 'conversation_busy');
    expect(res.body.detail).toContain('responseFormat');
    await events;
    // Nothing was injected: the conversation holds the first turn only.
    const msgs = await t.request('GET', `/api/v1/conversations/${conversationId}/messages`, { key });
    expect(msgs.body.messages.map((m: { content: string }) => m.content)).toEqual(['/delay 40\na b c d e', 'a b c d e']);
  });
});
