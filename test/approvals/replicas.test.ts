import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Replica, startReplicas } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { endedRun, pendingOf, shoutWaits } from './helpers.js';

let cluster: Awaited<ReturnType<typeof startReplicas>>;
let a: Replica;
let b: Replica;
let key: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
/** Runs whose end each replica wrote (the process that writes the end tells its listeners). */
const endedOn: [string[], string[]] = [[], []];

/** A replica as the approvals helpers call it: over app.inject. */
const caller = (app: FastifyInstance) => ({
  async request(method: string, url: string, options: { key?: string | null; body?: unknown } = {}) {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: { authorization: `Bearer ${options.key}`, ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      payload: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined, headers: res.headers };
  },
});

beforeAll(async () => {
  mcp = await startMcpServer();
  cluster = await startReplicas(2, { MCP_ALLOWED_HOSTS: '127.0.0.1' });
  [a, b] = cluster.replicas;
  a.services.runs.onRunFinished((r) => void endedOn[0].push(r.runId));
  b.services.runs.onRunFinished((r) => void endedOn[1].push(r.runId));
  ({ apiKey: key } = await a.services.tenancy.createTenant('acme'));
});
afterAll(async () => {
  await cluster.close();
  await mcp.close();
});

async function waitingRunOnA() {
  const agent = await caller(a.app).request('POST', '/api/v1/agents', {
    key,
    body: { name: 'agent', appId: 'app', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() },
  });
  expect(agent.status).toBe(201);
  const run = await caller(a.app).request('POST', `/api/v1/agents/${agent.body.id}/execute`, {
    key,
    body: { message: '/tool shout {"text":"across"}' },
  });
  expect(run.body.status).toBe('awaiting_approval');
  return run.body.runId as string;
}

/** The SSE events of a response body, parsed. */
function sseEvents(text: string) {
  return text
    .split('\n\n')
    .filter((block) => block.includes('event:'))
    .map((block) => {
      const field = (name: string) =>
        block
          .split('\n')
          .find((l) => l.startsWith(`${name}:`))
          ?.slice(name.length + 1)
          .trim();
      return { id: Number(field('id')), event: field('event')!, data: JSON.parse(field('data')!) };
    });
}

describe('a run awaiting approval, across replicas', () => {
  it('paused on one replica, resumes on the one that approves it; a follower on the first sees the continuation', async () => {
    const runId = await waitingRunOnA();
    expect(a.services.runs.activeCount).toBe(0);
    // Followed on A while it waits: the stream stays open until the run ends, wherever it runs.
    const followed = a.app.inject({ method: 'GET', url: `/api/v1/runs/${runId}/events`, headers: { authorization: `Bearer ${key}` } });
    const [approval] = await pendingOf(caller(b.app), key, runId);
    const approved = await caller(b.app).request('POST', `/api/v1/approvals/${approval.id}/approve`, { key });
    expect(approved.body.status).toBe('approved');

    const ended = await endedRun(caller(a.app), key, runId);
    expect(ended.status).toBe('completed');
    expect(ended.output).toContain('ACROSS');
    expect(endedOn[1]).toContain(runId);
    expect(endedOn[0]).not.toContain(runId);

    const events = sseEvents((await followed).body);
    expect(events.map((e) => e.event).filter((e) => e !== 'token')).toEqual([
      'approval_required',
      'tool_call_start',
      'tool_call_end',
      'done',
    ]);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
  });

  it('is cancelled from another replica while it waits', async () => {
    const runId = await waitingRunOnA();
    const [approval] = await pendingOf(caller(b.app), key, runId);
    const cancelled = await caller(b.app).request('POST', `/api/v1/runs/${runId}/cancel`, { key });
    expect(cancelled.body.status).toBe('cancelled');
    expect((await caller(a.app).request('GET', `/api/v1/approvals/${approval.id}`, { key })).body.status).toBe('cancelled');
  });

  it('is resumed once, though both replicas try', async () => {
    const runId = await waitingRunOnA();
    const [approval] = await pendingOf(caller(b.app), key, runId);
    const before = mcp.state.calls.length;
    await caller(a.app).request('POST', `/api/v1/approvals/${approval.id}/approve`, { key });
    // The other replica's attempt (its sweep, or a late decision's) finds nothing to claim.
    expect(await b.services.runs.resume(runId)).toBe(false);
    expect((await endedRun(caller(b.app), key, runId)).status).toBe('completed');
    expect(mcp.state.calls.length - before).toBe(1);
  });
});
