import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { deliverWebhook, taskIn, waitFor } from '../tasks/helpers.js';
import { childrenOf, one, type ReceivedSpan, type Receiver, startReceiver } from './receiver.js';

/**
 * Traces (docs/operations.md, "Traces"): the app exports over OTLP/HTTP to a receiver in this test,
 * which decodes the JSON payload; the span trees, attributes and links are asserted as a collector
 * would get them.
 */

let receiver: Receiver;
let t: TestApp;
let key: string;
let tenantId: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  receiver = await startReceiver();
  mcp = await startMcpServer();
  t = await startApp({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_SERVICE_NAME: 'agentry-under-test',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    TASK_WORKERS: '2',
    TASK_POLL_MS: '50',
  });
  ({ key, id: tenantId } = await t.tenant('traced'));
});
afterAll(async () => {
  await t?.close();
  await mcp?.close();
  await receiver?.close();
});

/** Exports what the app has buffered, then answers the server span of the request `requestId` and its trace. */
async function traceOf(requestId: unknown): Promise<{ server: ReceivedSpan; spans: ReceivedSpan[] }> {
  await t.services.tracing!.flush();
  const server = one(
    receiver.spans,
    receiver.spans.find((s) => s.attributes['agentry.request.id'] === requestId)?.name ?? '?',
    (s) => s.attributes['agentry.request.id'] === requestId,
  );
  return { server, spans: receiver.trace(server.traceId) };
}

const GENAI_CONTENT = [
  'gen_ai.input.messages',
  'gen_ai.output.messages',
  'gen_ai.system_instructions',
  'gen_ai.tool.call.arguments',
  'gen_ai.tool.call.result',
];

describe('traces over OTLP/HTTP', () => {
  it('an execute with a tool call: request -> invoke_agent -> chat steps and execute_tool -> the MCP call, with GenAI attributes and no content', async () => {
    const agent = await t.agent(key, { name: 'Calculator', tools: [{ type: 'mcp', url: mcp.url }] });
    const { data: result, error, response } = await execute(t, key, agent.id, { message: '/tool add {"a":2,"b":3}' });
    expect(response.status, JSON.stringify(error)).toBe(200);
    expect(result!.toolCalls[0].result).toEqual({ sum: 5 });

    const { server, spans } = await traceOf(response.headers.get('x-request-id'));
    expect(server).toMatchObject({
      name: 'POST /api/v1/agents/:id/execute',
      kind: 2,
      parentSpanId: undefined,
      attributes: expect.objectContaining({
        'http.request.method': 'POST',
        'http.route': '/api/v1/agents/:id/execute',
        'http.response.status_code': 200,
        'url.path': `/api/v1/agents/${agent.id}/execute`,
      }),
    });
    expect(server.resource).toMatchObject({ 'service.name': 'agentry-under-test', 'deployment.environment.name': 'test' });

    const run = one(spans, 'invoke_agent Calculator');
    expect(run.parentSpanId).toBe(server.spanId);
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'builtin',
      'gen_ai.request.model': 'echo',
      'gen_ai.agent.id': agent.id,
      'gen_ai.agent.name': 'Calculator',
      'gen_ai.conversation.id': result!.conversationId,
      'agentry.run.id': result!.runId,
      'agentry.run.status': 'completed',
      'gen_ai.usage.input_tokens': result!.tokenUsage.inputTokens,
      'gen_ai.usage.output_tokens': result!.tokenUsage.outputTokens,
    });

    // Two model steps (the call, then the answer with its result), and the tool call between them.
    const chats = childrenOf(spans, run).filter((s) => s.name === 'chat echo');
    expect(chats.map((c) => c.attributes['gen_ai.response.finish_reasons'])).toEqual([['tool_calls'], ['stop']]);
    for (const chat of chats) {
      expect(chat.kind).toBe(3);
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'builtin',
        'gen_ai.request.model': 'echo',
      });
      expect(chat.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
      expect(chat.attributes['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));
    }
    const usage = chats.reduce((n, c) => n + (c.attributes['gen_ai.usage.output_tokens'] as number), 0);
    expect(usage).toBe(result!.tokenUsage.outputTokens);

    const tool = one(spans, 'execute_tool add');
    const { data: details } = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: result!.runId } } });
    expect(tool.parentSpanId).toBe(run.spanId);
    // The run names its trace, for a person to look it up in the tracer.
    expect(details!.traceId).toBe(server.traceId);
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'add',
      'gen_ai.tool.call.id': details!.toolCalls[0].id,
      'agentry.tool.source': 'mcp',
    });

    // The MCP call went with the tool span's context: its client span is the tool's child, and the
    // MCP server received that client span's traceparent.
    const calls = childrenOf(spans, tool);
    expect(calls.map((c) => [c.name, c.kind, c.attributes['server.address']])).toEqual([['POST', 3, '127.0.0.1']]);
    expect(mcp.state.headers.map((h) => h.traceparent)).toContain(`00-${server.traceId}-${calls[0].spanId}-01`);
    // The MCP session's own requests (initialize, tools/list) are the run's.
    const session = childrenOf(spans, run).filter((s) => s.kind === 3 && s.name !== 'chat echo');
    expect(session.length).toBeGreaterThanOrEqual(2);
    expect(session.every((s) => s.attributes['server.address'] === '127.0.0.1')).toBe(true);
    // The call names its tool call's span in `_meta` too (OpenTelemetry's conventions for MCP).
    expect(mcp.state.callMeta).toEqual([{ traceparent: `00-${server.traceId}-${tool.spanId}-01` }]);

    // Prompt, completion and tool-call text are not recorded unless asked for.
    for (const span of spans) for (const name of GENAI_CONTENT) expect(span.attributes).not.toHaveProperty(name);
    expect(JSON.stringify(spans)).not.toContain('"a":2');
  });

  it('continues the trace of an incoming W3C traceparent', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parent = '00f067aa0ba902b7';
    const res = await t.api(key).GET('/api/v1/agents', { headers: { traceparent: `00-${traceId}-${parent}-01` } });
    expect(res.response.status).toBe(200);
    const { server } = await traceOf(res.response.headers.get('x-request-id'));
    expect(server).toMatchObject({ name: 'GET /api/v1/agents', traceId, parentSpanId: parent });
    // A malformed one starts a trace of its own.
    const bad = await t.api(key).GET('/api/v1/agents', { headers: { traceparent: 'not-a-traceparent' } });
    const fresh = await traceOf(bad.response.headers.get('x-request-id'));
    expect(fresh.server.parentSpanId).toBeUndefined();
    expect(fresh.server.traceId).toMatch(/^[0-9a-f]{32}$/);
  });

  it('a delegated call across two agents is one trace: the callee run is the child of the caller’s tool call', async () => {
    const helper = await t.agent(key, { name: 'Helper' });
    const lead = await t.agent(key, { name: 'Lead', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_helper' }] });
    const { data, error, response } = await execute(t, key, lead.id, { message: '/tool ask_helper {"message":"find the answer"}' });
    expect(response.status, JSON.stringify(error)).toBe(200);
    const calleeRunId = data!.toolCalls[0].result!.runId as string;

    const { server, spans } = await traceOf(response.headers.get('x-request-id'));
    const leadRun = one(spans, 'invoke_agent Lead');
    expect(leadRun.parentSpanId).toBe(server.spanId);
    const tool = one(spans, 'execute_tool ask_helper');
    expect(tool.parentSpanId).toBe(leadRun.spanId);
    expect(tool.attributes['agentry.tool.source']).toBe('delegation');
    const helperRun = one(spans, 'invoke_agent Helper');
    expect(helperRun.parentSpanId).toBe(tool.spanId);
    expect(helperRun.attributes).toMatchObject({
      'gen_ai.agent.id': helper.id,
      'agentry.run.id': calleeRunId,
      'agentry.run.kind': 'delegation',
    });
    expect(childrenOf(spans, helperRun).map((s) => s.name)).toEqual(['chat echo']);
    // The callee's run keeps the context it was started in, for work continuing it elsewhere.
    const row = await t.db.kysely.selectFrom('runs').select('traceparent').where('id', '=', calleeRunId).executeTakeFirstOrThrow();
    expect(row.traceparent).toBe(`00-${server.traceId}-${tool.spanId}-01`);
  });

  it('a task run: the webhook request fires the task, and the job the dispatcher runs links to that fire', async () => {
    const agent = await t.agent(key, { name: 'Worker' });
    const created = await t.api(key).POST('/api/v1/tasks', {
      body: { name: 'On order', description: 'New order', agentId: agent.id, type: 'triggered', trigger: { type: 'webhook' } },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    const task = created.data!;
    const trigger = task.trigger;
    if (trigger?.type !== 'webhook' || !trigger.secret) throw new Error(`no webhook secret: ${JSON.stringify(trigger)}`);
    const body = '{"orderId":42}';
    const delivered = await deliverWebhook(t, task.id, trigger.secret, body);
    expect(delivered.status, delivered.text).toBe(202);
    const done = await taskIn(t, key, task.id, ['completed']);

    const { server, spans } = await traceOf(delivered.headers['x-request-id']);
    expect(server.name).toBe('POST /api/v1/hooks/:taskId');
    const fire = one(spans, 'task.fire');
    expect(fire.parentSpanId).toBe(server.spanId);
    expect(fire.attributes).toMatchObject({
      'agentry.task.id': task.id,
      'agentry.fire.source': 'webhook',
      'agentry.fire.decision': 'fired',
    });

    // The job runs later, wherever a dispatcher claims it: a trace of its own, linked to the fire.
    const job: ReceivedSpan = await waitFor(async () => {
      await t.services.tracing!.flush();
      return receiver.spans.find((s) => s.name === 'task.job' && s.attributes['agentry.task.id'] === task.id)!;
    });
    expect(job.parentSpanId).toBeUndefined();
    expect(job.traceId).not.toBe(server.traceId);
    expect(job.links).toEqual([{ traceId: fire.traceId, spanId: fire.spanId }]);
    expect(job.attributes).toMatchObject({ 'agentry.job.reason': 'webhook', 'agentry.run.id': done.lastRunId ?? expect.any(String) });
    const jobTrace = receiver.trace(job.traceId);
    const run = one(jobTrace, 'invoke_agent Worker');
    expect(run.parentSpanId).toBe(job.spanId);
    expect(run.attributes).toMatchObject({ 'agentry.run.kind': 'task', 'agentry.run.status': 'completed' });
    expect(childrenOf(jobTrace, run).map((s) => s.name)).toEqual(['chat echo']);
  });

  it('a run started by a conversation’s message, a chat completion or an A2A message is the child of that request', async () => {
    const agent = await t.agent(key, { name: 'Answerer' });
    const api = t.api(key);
    const conversation = await api.POST('/api/v1/conversations', { body: { agentId: agent.id } });
    expect(conversation.response.status, JSON.stringify(conversation.error)).toBe(201);
    const posted = await api.POST('/api/v1/conversations/{id}/messages', {
      params: { path: { id: conversation.data!.id } },
      body: { content: 'hello' },
    });
    const completion = await api.POST('/v1/chat/completions', {
      body: { model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'hello' }] },
    });
    // JSON-RPC as an A2A client sends it (test/a2a drives the SDK's client).
    const a2a = await t.raw('POST', `/a2a/${tenantId}/agents/${agent.id}`, {
      key,
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm-1', role: 'user', parts: [{ kind: 'text', text: 'hello' }] } },
      },
    });
    expect(a2a.body.result?.status?.state, a2a.text).toBe('completed');
    const requests: [string, number, unknown][] = [
      ['POST /api/v1/conversations/:id/messages', posted.response.status, posted.response.headers.get('x-request-id')],
      ['POST /v1/chat/completions', completion.response.status, completion.response.headers.get('x-request-id')],
      ['POST /a2a/:tenantId/agents/:agentId', a2a.status, a2a.headers['x-request-id']],
    ];
    for (const [route, status, requestId] of requests) {
      expect(status, route).toBe(200);
      const { server, spans } = await traceOf(requestId);
      expect(server.name).toBe(route);
      const run = one(spans, 'invoke_agent Answerer');
      expect(run.parentSpanId, route).toBe(server.spanId);
      expect(childrenOf(spans, run).map((s) => s.name)).toEqual(['chat echo']);
    }
  });

  it('a task run by hand: its job is the child of the request, its run the job’s', async () => {
    const agent = await t.agent(key, { name: 'ByHand' });
    const api = t.api(key);
    const created = await api.POST('/api/v1/tasks', {
      body: { name: 'Weekly', description: 'weekly report', agentId: agent.id, type: 'scheduled', schedule: '0 9 * * 1' },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    const started = await api.POST('/api/v1/tasks/{id}/run', { params: { path: { id: created.data!.id } }, body: {} });
    expect(started.response.status, JSON.stringify(started.error)).toBe(202);
    const runId = started.data!.runId!;
    await waitFor(async () => {
      const { data } = await api.GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
      return data!.status === 'completed';
    });

    const { server, spans } = await traceOf(started.response.headers.get('x-request-id'));
    expect(server.name).toBe('POST /api/v1/tasks/:id/run');
    const job = one(spans, 'task.job');
    expect(job.parentSpanId).toBe(server.spanId);
    expect(job.attributes).toMatchObject({ 'agentry.job.reason': 'manual', 'agentry.run.id': runId });
    const run = one(spans, 'invoke_agent ByHand');
    expect(run.parentSpanId).toBe(job.spanId);
  });

  it('a request the client gives up on ends its span once, marked aborted', async () => {
    const agent = await t.agent(key, { name: 'Slow' });
    const base = await t.listen();
    const controller = new AbortController();
    const pending = fetch(`${base}/api/v1/agents/${agent.id}/execute`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: '/delay 300\nslowly, one word at a time' }),
      signal: controller.signal,
    });
    // Gone once the run has begun: its span exists.
    await waitFor(
      async () => (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agent.id } } })).data!.runs.length > 0,
      10_000,
      'the run to begin',
    );
    controller.abort();
    await expect(pending).rejects.toThrow();
    const server = await waitFor(async () => {
      await t.services.tracing!.flush();
      return receiver.spans.find(
        (s) => s.name === 'POST /api/v1/agents/:id/execute' && s.attributes['url.path'] === `/api/v1/agents/${agent.id}/execute`,
      );
    });
    expect(server).toMatchObject({ status: 2, attributes: expect.objectContaining({ 'error.type': 'aborted' }) });
    expect(server.attributes).not.toHaveProperty('http.response.status_code');
    expect(receiver.spans.filter((s) => s.spanId === server.spanId)).toHaveLength(1);
  });
});
