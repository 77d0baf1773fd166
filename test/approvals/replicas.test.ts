import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { apiOf, type Replica, startReplicas } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { type Caller, endedRun, pendingOf, shoutWaits } from './helpers.js';

let cluster: Awaited<ReturnType<typeof startReplicas>>;
let a: Replica;
let b: Replica;
let key: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
/** Runs whose end each replica wrote (the process that writes the end tells its listeners). */
const endedOn: [string[], string[]] = [[], []];

/** Records the runs whose end `replica` wrote: its approvals service is one of the finished listeners its runs service tells. */
function endsWrittenBy(replica: Replica, runIds: string[]) {
  const approvals = replica.services.approvals;
  const runFinished = approvals.runFinished.bind(approvals);
  vi.spyOn(approvals, 'runFinished').mockImplementation(async (run) => {
    runIds.push(run.runId);
    await runFinished(run);
  });
}

/** A replica as the approvals helpers call it: the typed client over its app.inject. */
const caller = (app: FastifyInstance): Caller => ({ api: (apiKey) => apiOf(app, apiKey) });
const approve = (app: FastifyInstance, id: string) =>
  apiOf(app, key).POST('/api/v1/approvals/{id}/approve', { params: { path: { id } }, body: {} });

beforeAll(async () => {
  mcp = await startMcpServer();
  cluster = await startReplicas(2, { MCP_ALLOWED_HOSTS: '127.0.0.1' });
  [a, b] = cluster.replicas;
  endsWrittenBy(a, endedOn[0]);
  endsWrittenBy(b, endedOn[1]);
  ({ apiKey: key } = await a.services.tenancy.createTenant('acme'));
});
afterAll(async () => {
  await cluster.close();
  await mcp.close();
});

async function waitingRunOnA() {
  const agent = await apiOf(a.app, key).POST('/api/v1/agents', {
    body: { name: 'agent', appId: 'app', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() },
  });
  expect(agent.response.status).toBe(201);
  const run = await execute(apiOf(a.app, key), agent.data!.id, { message: '/tool shout {"text":"across"}' });
  expect(run.run?.status).toBe('awaiting_approval');
  return run.run!.runId;
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
    const followed = apiOf(a.app, key).GET('/api/v1/runs/{runId}/events', { params: { path: { runId } }, parseAs: 'text' });
    const [approval] = await pendingOf(caller(b.app), key, runId);
    const approved = await approve(b.app, approval.id);
    expect(approved.data!.status).toBe('approved');

    const ended = await endedRun(caller(a.app), key, runId);
    expect(ended.status).toBe('completed');
    expect(ended.output).toContain('ACROSS');
    expect(endedOn[1]).toContain(runId);
    expect(endedOn[0]).not.toContain(runId);

    const events = sseEvents((await followed).data!);
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
    const cancelled = await apiOf(b.app, key).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId } } });
    expect(cancelled.data!.status).toBe('cancelled');
    expect((await apiOf(a.app, key).GET('/api/v1/approvals/{id}', { params: { path: { id: approval.id } } })).data!.status).toBe(
      'cancelled',
    );
  });

  it('is resumed once, though both replicas try', async () => {
    const runId = await waitingRunOnA();
    const [approval] = await pendingOf(caller(b.app), key, runId);
    const before = mcp.state.calls.length;
    await approve(a.app, approval.id);
    // The other replica's attempt (its sweep, or a late decision's) finds nothing to claim.
    expect(await b.services.runs.resume(runId)).toBe(false);
    expect((await endedRun(caller(b.app), key, runId)).status).toBe('completed');
    expect(mcp.state.calls.length - before).toBe(1);
  });
});
