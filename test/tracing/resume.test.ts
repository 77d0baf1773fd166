import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pendingOf } from '../approvals/helpers.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { type Replica, replica } from '../tasks/helpers.js';
import { childrenOf, one, type Receiver, startReceiver } from './receiver.js';

/**
 * A run resumed on another replica continues the same trace: the run waits for a person's approval on
 * one app, the approval is given through another on the same database, which resumes it there.
 */

let receiver: Receiver;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
let t: TestApp;
let other: Replica;
let key: string;

beforeAll(async () => {
  receiver = await startReceiver();
  mcp = await startMcpServer();
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'agentry' };
  t = await startApp({ ...otel, OTEL_RESOURCE_ATTRIBUTES: 'service.instance.id=replica-a' });
  other = await replica(t, { ...otel, OTEL_RESOURCE_ATTRIBUTES: 'service.instance.id=replica-b', MCP_ALLOWED_HOSTS: '127.0.0.1' });
  ({ key } = await t.tenant('resumed'));
});
afterAll(async () => {
  await other?.close();
  await t?.close();
  await mcp?.close();
  await receiver?.close();
});

describe('a run resumed on another replica', () => {
  it('continues the trace it was started in, linked to the approval that resumed it', async () => {
    const agent = await t.agent(key, {
      name: 'Careful',
      tools: [{ type: 'mcp', url: mcp.url }],
      configuration: { approval: { rules: [{ tool: 'shout', reason: 'shouting is loud' }] } },
    });
    const res = await execute(t, key, agent.id, { message: '/tool shout {"text":"hi"}' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.status).toBe('awaiting_approval');
    const runId = res.data!.runId;
    const [approval] = await pendingOf(t, key, runId);

    // Approved through the other replica, which resumes the run there.
    const approved = await other.app.inject({
      method: 'POST',
      url: `/api/v1/approvals/${approval.id}/approve`,
      headers: { authorization: `Bearer ${key}` },
    });
    expect(approved.statusCode, approved.body).toBe(200);
    const status = await vi.waitFor(
      async () => {
        const { data } = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
        expect(['completed', 'failed']).toContain(data!.status);
        return data!.status;
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(status).toBe('completed');
    // The resumed part's span ends just after the run's end is written, which the status above can
    // show first: flush until both replicas' run spans arrived.
    const runSpansOf = () => receiver.spans.filter((s) => s.name === 'invoke_agent Careful' && s.attributes['agentry.run.id'] === runId);
    await vi.waitFor(
      async () => {
        await t.services.tracing!.flush();
        await other.services.tracing!.flush();
        expect(runSpansOf().length).toBeGreaterThanOrEqual(2);
      },
      { timeout: 5_000, interval: 50 },
    );

    const server = one(
      receiver.spans,
      'POST /api/v1/agents/:id/execute',
      (s) => s.attributes['agentry.request.id'] === res.response.headers.get('x-request-id'),
    );
    const runSpans = runSpansOf();
    // Exported by each replica in its own time: told apart by the replica, not by arrival.
    expect(runSpans.map((s) => s.resource['service.instance.id']).sort()).toEqual(['replica-a', 'replica-b']);
    const first = runSpans.find((s) => s.resource['service.instance.id'] === 'replica-a')!;
    const resumed = runSpans.find((s) => s.resource['service.instance.id'] === 'replica-b')!;
    // The first part, up to the pause, and the part resumed elsewhere: both in the trace of the request that started the run.
    expect(first).toMatchObject({ traceId: server.traceId, parentSpanId: server.spanId });
    expect(resumed).toMatchObject({ traceId: server.traceId, parentSpanId: server.spanId });
    expect(resumed.attributes).toMatchObject({ 'agentry.run.resumed': true, 'agentry.run.status': 'completed' });
    const approvalRequest = one(receiver.spans, 'POST /api/v1/approvals/:id/approve');
    expect(approvalRequest.resource['service.instance.id']).toBe('replica-b');
    expect(resumed.links).toEqual([{ traceId: approvalRequest.traceId, spanId: expect.any(String) }]);
    // The approved call ran in the resumed part.
    expect(childrenOf(receiver.trace(server.traceId), resumed).map((s) => s.name)).toContain('execute_tool shout');
  });

  it('a run whose process stopped renewing its lease is recovered by another, in the run’s own trace', async () => {
    const agent = await t.agent(key, { name: 'Abandoned' });
    const executing = execute(t, key, agent.id, { message: '/delay 200\none two three four five six seven eight nine ten' });
    const running = await vi.waitFor(
      async () => {
        const row = await t.db.kysely.selectFrom('runs').select(['id', 'status']).where('agent_id', '=', agent.id).executeTakeFirst();
        expect(row?.status, 'the run never started').toBe('running');
        return row!;
      },
      { timeout: 5_000, interval: 20 },
    );
    // Its process "died": the lease is another owner's and long expired, so only the other replica recovers it.
    await t.db.kysely
      .updateTable('runs')
      .set({ lease_owner: 'dead-process', lease_expires_at: new Date(Date.now() - 60_000).toISOString() })
      .where('id', '=', running.id)
      .execute();
    // The other replica recovers it (this call, or its own recovery loop if that came first).
    await other.services.runs.recoverInterrupted();
    const ended = await t.db.kysely.selectFrom('runs').select(['status', 'error']).where('id', '=', running.id).executeTakeFirstOrThrow();
    expect(ended.status).toBe('failed');
    expect(JSON.parse(ended.error!).code).toBe('interrupted');
    const { response } = await executing;
    await t.services.tracing!.flush();
    await other.services.tracing!.flush();

    const server = one(
      receiver.spans,
      'POST /api/v1/agents/:id/execute',
      (s) => s.attributes['agentry.request.id'] === response.headers.get('x-request-id'),
    );
    const recovered = one(receiver.spans, 'run.recover', (s) => s.attributes['agentry.run.id'] === running.id);
    expect(recovered).toMatchObject({ traceId: server.traceId, parentSpanId: server.spanId, status: 2 });
    expect(recovered.attributes['error.type']).toBe('interrupted');
    expect(recovered.resource['service.instance.id']).toBe('replica-b');
  });
});
