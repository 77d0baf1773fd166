import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse, type SseEvent } from '../helpers/sse.js';

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

/**
 * Starts a streamed run and returns once it is running, with the stream still open: `events` ends with
 * the stream, `seen` holds the events received so far.
 */
async function startStream(agentId: string, message: string, conversationId?: string) {
  const res = await t.fetch(`/api/v1/agents/${agentId}/stream`, key, { body: { message, conversationId } });
  let seen: SseEvent[] = [];
  // stopAfter never stops: it only shows the events received so far.
  const events = readSse(res, {
    stopAfter: (received) => {
      seen = received;
      return false;
    },
  });
  const runId = await vi.waitFor(
    async () => {
      const runs = await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } });
      const running = runs.data!.runs.find((r) => r.status === 'running');
      if (!running) throw new Error('no run is running yet');
      return running.id;
    },
    { timeout: 10_000, interval: 20 },
  );
  const run = await getRun(runId);
  return { runId, conversationId: run.data!.conversationId!, events, seen: () => seen };
}
const getRun = (runId: string) => t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
const cancel = (runId: string) => t.api(key).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId } } });
const messages = async (id: string) =>
  (await t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path: { id } } })).data!.messages;
type Message = paths['/api/v1/conversations/{id}/messages']['post']['requestBody']['content']['application/json'];
const send = (id: string, body: Message) => t.api(key).POST('/api/v1/conversations/{id}/messages', { params: { path: { id } }, body });
const inject = (id: string, content: string) =>
  t.api(key).POST('/api/v1/conversations/{id}/inject', { params: { path: { id } }, body: { content } });
/** Waits until the stream has carried a token: the answer is being said. */
const firstToken = (seen: () => SseEvent[]) =>
  vi.waitFor(() => expect(seen().some((e) => e.event === 'token')).toBe(true), { timeout: 10_000, interval: 5 });

describe('cancel', () => {
  it('aborts a slow tool at once, keeps partial output, ends cancelled exactly once', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const { runId, events } = await startStream(a.id, '/tool slow {"ms":10000}');
    // Wait until the tool is in flight.
    await vi.waitFor(() => expect(mcp.state.calls.some((c) => c.name === 'slow')).toBe(true), { timeout: 10_000, interval: 20 });
    const started = Date.now();
    const res = await cancel(runId);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data).toMatchObject({ id: runId, status: 'cancelled', error: { code: 'cancelled' } });
    expect(res.data!.toolCalls[0].result).toEqual({ error: { code: 'cancelled', message: 'the run was cancelled' } });
    const streamed = await events;
    expect(streamed.map((e) => e.event)).toEqual(['tool_call_start', 'tool_call_end', 'error']);
    expect(streamed.at(-1)!.data).toEqual({ code: 'cancelled', message: 'the run was cancelled' });
    expectProblem(await cancel(runId), 409, 'run_not_active');
  });

  it('stops a streaming answer and keeps what was said', async () => {
    const a = await t.agent(key);
    const { runId, conversationId, events, seen } = await startStream(a.id, '/delay 50\none two three four five six seven eight nine ten');
    await firstToken(seen);
    const res = await cancel(runId);
    expect(res.data!.status).toBe('cancelled');
    const partial = res.data!.output;
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
    const msgs = await messages(conversationId);
    expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(msgs[1].content).toBe(partial);
    const next = await send(conversationId, { content: 'and now?' });
    expect(next.data).toMatchObject({ message: { content: 'and now?' } });
  });
});

describe('inject', () => {
  it('delivers a message at the next step boundary of the running answer', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const slowCalls = () => mcp.state.calls.filter((c) => c.name === 'slow').length;
    const before = slowCalls();
    const { runId, conversationId, events } = await startStream(a.id, '/tool slow {"ms":400}');
    // Inject while the tool runs, so the message waits for the next step.
    await vi.waitFor(() => expect(slowCalls()).toBeGreaterThan(before), { timeout: 10_000, interval: 10 });
    const res = await inject(conversationId, 'also this');
    expect(res.response.status, JSON.stringify(res.error)).toBe(202);
    expect(res.data).toEqual({ messageId: expect.any(String), runId });
    const streamed = await events;
    expect(streamed.at(-1)!.event).toBe('done');
    const run = (await getRun(runId)).data!;
    // Step 2 received the injected message; echo answers the newest user message.
    expect(run.steps[1].injected).toEqual(['also this']);
    expect(run.output).toBe('also this');
    const msgs = await messages(conversationId);
    expect(msgs.map((m) => [m.role, m.content])).toEqual([
      ['user', '/tool slow {"ms":400}'],
      ['user', 'also this'],
      ['assistant', 'also this'],
    ]);
  });

  it('gives a message injected during the final step its own turn', async () => {
    const a = await t.agent(key);
    const { runId, conversationId, events, seen } = await startStream(a.id, '/delay 60\nslow words here');
    await firstToken(seen);
    await inject(conversationId, 'late news');
    await events;
    const run = (await getRun(runId)).data!;
    expect(run.steps).toHaveLength(2);
    expect(run.steps[1].injected).toEqual(['late news']);
    expect(run.output).toBe('slow words herelate news');
  });

  it('answers 409 no_active_run when nothing is running', async () => {
    const a = await t.agent(key);
    const conv = (await t.api(key).POST('/api/v1/conversations', { body: { agentId: a.id } })).data!;
    expectProblem(await inject(conv.id, 'x'), 409, 'no_active_run');
    // raw: a message without its content
    expectProblem(await t.raw('POST', `/api/v1/conversations/${conv.id}/inject`, { key, body: {} }), 400, 'validation_failed');
    expectProblem(await inject('01a00000-0000-7000-8000-000000000000', 'x'), 404, 'not_found');
  });
});

describe('a second message while the agent answers (onActiveRun)', () => {
  it('rejects by default with 409 conversation_busy', async () => {
    const a = await t.agent(key);
    const { conversationId, events } = await startStream(a.id, '/delay 40\na b c d e');
    expectProblem(await send(conversationId, { content: 'wait' }), 409, 'conversation_busy');
    await events;
  });

  it('enqueues: the message runs after the current answer', async () => {
    const a = await t.agent(key, { configuration: { onActiveRun: 'enqueue' } });
    const { conversationId, events } = await startStream(a.id, '/delay 30\na b c d');
    const res = await send(conversationId, { content: 'queued one' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data).toMatchObject({ message: { role: 'assistant', content: 'queued one' } });
    await events;
    expect((await messages(conversationId)).map((m) => m.content)).toEqual(['/delay 30\na b c d', 'a b c d', 'queued one', 'queued one']);
  });

  it('injects when asked per message', async () => {
    const a = await t.agent(key);
    const { runId, conversationId, events } = await startStream(a.id, '/delay 40\na b c d e');
    const res = await send(conversationId, { content: 'btw', onActiveRun: 'inject' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(202);
    expect(res.data).toMatchObject({ injected: true, runId, conversationId });
    await events;
  });

  it('refuses to inject a message with a responseFormat (409): the running answer has no shape to give it', async () => {
    const a = await t.agent(key);
    const { conversationId, events } = await startStream(a.id, '/delay 40\na b c d e');
    const res = await send(conversationId, {
      content: '{"a": 1}',
      onActiveRun: 'inject',
      responseFormat: { type: 'json_schema', schema: { type: 'object' } },
    });
    expectProblem(res, 409, 'conversation_busy');
    expect(res.error!.detail).toContain('responseFormat');
    await events;
    // Nothing was injected: the conversation holds the first turn only.
    expect((await messages(conversationId)).map((m) => m.content)).toEqual(['/delay 40\na b c d e', 'a b c d e']);
  });
});
