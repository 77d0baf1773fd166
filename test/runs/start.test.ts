import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'kysely';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import type { Agent } from '../../src/agents/schemas.js';
import { runsNoticed } from '../../src/runs/events.js';
import type { RuntimeTool } from '../../src/runtime/tools/types.js';
import { execute } from '../helpers/execute.js';
import { readSse } from '../helpers/sse.js';

// A run's start is written (runs/start.ts), then the run executes, then its end is written. These tests
// hold an execute answered as JSON to what a streamed run stores, and to what no run may do: act or be
// seen before it is recorded, or leave traces when it is not.

let t: TestApp;
let key: string;
/** What the `probe` tool found in the database when it was called: the calling run's status. */
const probed: string[] = [];
const probe: RuntimeTool<Agent> = {
  name: 'probe',
  description: 'Reports whether the calling run is recorded',
  inputSchema: { type: 'object', properties: {} },
  async execute(_input, ctx) {
    const row = await t.db.kysely.selectFrom('runs').select('status').where('id', '=', ctx.runId).executeTakeFirst();
    probed.push(row?.status ?? 'not recorded');
    return { recorded: Boolean(row) };
  },
};

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  // The registry takes its providers when it is built: the probe joins the tools it assembles for each run.
  const tools = t.services.tools;
  const forRun = tools.forRun.bind(tools);
  vi.spyOn(tools, 'forRun').mockImplementation(async (ctx) => {
    const set = await forRun(ctx);
    return { ...set, tools: [...set.tools, probe], sources: new Map([...(set.sources ?? []), ['probe', 'probe']]) };
  });
});
afterAll(() => t.close());

/** Tables written, one entry per statement, while `action` runs (the change feed hears every write). */
async function tablesWritten<T>(action: () => Promise<T>): Promise<{ result: T; writes: string[] }> {
  const writes: string[] = [];
  const original = t.db.changes.changed.bind(t.db.changes);
  t.db.changes.changed = (table: string) => {
    writes.push(table);
    original(table);
  };
  try {
    return { result: await action(), writes };
  } finally {
    t.db.changes.changed = original;
  }
}

const count = (writes: string[], table: string) => writes.filter((w) => w === table).length;

/** A run as the API shows it, without what differs between any two runs. */
async function stored(runId: string) {
  const api = t.api(key);
  const run = (await api.GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;
  const conversationId = run.conversationId!;
  const conversation = (await api.GET('/api/v1/conversations/{id}', { params: { path: { id: conversationId } } })).data!;
  const messages = (await api.GET('/api/v1/conversations/{id}/messages', { params: { path: { id: conversationId } } })).data!;
  const events = await readSse(await t.fetch(`/api/v1/runs/${runId}/events`, key));
  const reply = messages.messages.find((m) => m.role === 'assistant');
  return {
    run: {
      ...run,
      id: undefined,
      runId: undefined,
      conversationId: undefined,
      kind: undefined,
      createdAt: undefined,
      startedAt: undefined,
      completedAt: undefined,
      duration: undefined,
      // Each step's clock is its own run's; the fields are there.
      steps: run.steps?.map(({ startedAt, completedAt, durationMs, ...step }) => ({
        ...step,
        timed: typeof startedAt === 'string' && typeof completedAt === 'string' && typeof durationMs === 'number',
      })),
    },
    conversation: {
      messageCount: conversation.messageCount,
      activeRunId: conversation.activeRunId,
      status: conversation.status,
      name: conversation.name,
      // The conversation's last message is the reply.
      lastMessageIsReply: conversation.lastMessageAt === reply?.createdAt,
    },
    messages: messages.messages.map((m) => ({
      role: m.role,
      content: m.content,
      ofThisRun: m.runId === runId,
    })),
    events: events.map((e) => ({ id: e.id, event: e.event, data: { ...e.data, runId: undefined, conversationId: undefined } })),
  };
}

describe('a run’s start, then its end', () => {
  it('stores what a streamed run stores, its start and its end written as two', async () => {
    const agentId = (await t.agent(key)).id;
    await t.listen();
    const message = 'Hello, where is my order 4711?';

    const run = () => execute(t, key, agentId, { message });
    const stream = async () =>
      readSse(await t.fetch(`/api/v1/agents/${agentId}/execute`, key, { method: 'POST', body: { message, stream: true } }));
    // A statement's first use also compiles it, which the change feed hears as well: count the second runs.
    await run();
    await stream();

    // However fast the model, the start is written, then the end: no path only an instant model takes.
    const once = await tablesWritten(run);
    expect(once.result.response.status, JSON.stringify(once.result.error)).toBe(200);
    expect(count(once.writes, 'runs')).toBe(2);
    expect(count(once.writes, 'conversations')).toBe(2);
    const streamed = await tablesWritten(stream);
    expect(count(streamed.writes, 'runs')).toBe(2);
    expect(count(streamed.writes, 'conversations')).toBe(2);
    const streamedRunId = streamed.result.at(-1)!.data.runId;

    const a = await stored(once.result.data!.runId);
    const b = await stored(streamedRunId);
    expect(a).toEqual(b);
    expect(a.conversation).toEqual({ messageCount: 2, activeRunId: null, status: 'active', name: message, lastMessageIsReply: true });
    expect(a.run).toMatchObject({ status: 'completed', output: message, error: null, steps: [{ model: 'builtin/echo', timed: true }] });
    expect(a.events.map((e) => e.event)).toEqual(['token', 'token', 'token', 'token', 'token', 'token', 'done']);
    expect(a.events.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5', '6', '7']);
    expect(a.messages).toEqual([
      { role: 'user', content: message, ofThisRun: true },
      { role: 'assistant', content: message, ofThisRun: true },
    ]);
  });

  it('announces to other replicas the events of an executed run, as of a streamed one', async () => {
    const agentId = (await t.agent(key)).id;
    await execute(t, key, agentId, { message: 'warm up' });
    const noticed = new Set<string>();
    const unsubscribe = t.services.bus.subscribe('run.events', (payload) => {
      for (const runId of runsNoticed(payload)) noticed.add(runId);
    });
    try {
      const executed = await execute(t, key, agentId, { message: 'quiet please' });
      expect(executed.response.status, JSON.stringify(executed.error)).toBe(200);
      const streamed = await readSse(
        await t.fetch(`/api/v1/agents/${agentId}/execute`, key, { method: 'POST', body: { message: 'loud please', stream: true } }),
      );
      // Signals are sent once per turn of the event loop: let the last one out.
      await new Promise((r) => setTimeout(r, 50));
      expect(noticed.has(streamed.at(-1)!.data.runId)).toBe(true);
      expect(noticed.has(executed.data!.runId)).toBe(true);
    } finally {
      unsubscribe();
    }
  });

  it('calls no tool before the run is recorded', async () => {
    const agentId = (await t.agent(key)).id;
    probed.length = 0;
    const res = await execute(t, key, agentId, { message: '/tool probe {}' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.toolCalls).toEqual([{ name: 'probe', input: {}, result: { recorded: true } }]);
    expect(probed).toEqual(['running']);
    const run = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: res.data!.runId } } });
    expect(run.data).toMatchObject({
      status: 'completed',
      toolCalls: [expect.objectContaining({ name: 'probe', result: { recorded: true } })],
    });
  });

  it('shows a run as running while it answers, then ends it as usual', async () => {
    const agentId = (await t.agent(key)).id;
    const pending = execute(t, key, agentId, { message: '/delay 150\nslow answer here' });
    const running = await vi.waitFor(
      async () => {
        const runs = await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } });
        const found = runs.data!.runs.find((r) => r.status === 'running');
        if (!found) throw new Error('the run was never seen running');
        return { id: found.id, conversationId: found.conversationId! };
      },
      { timeout: 10_000, interval: 10 },
    );
    const busy = await t.api(key).GET('/api/v1/conversations/{id}', { params: { path: { id: running.conversationId } } });
    expect(busy.data).toMatchObject({ messageCount: 1, activeRunId: running.id });

    const res = await pending;
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data).toMatchObject({ runId: running.id, output: 'slow answer here', status: 'completed' });
    const conversation = await t.api(key).GET('/api/v1/conversations/{id}', { params: { path: { id: running.conversationId } } });
    expect(conversation.data).toMatchObject({ messageCount: 2, activeRunId: null });
  });

  it('leaves nothing behind, and runs no tool, when the start cannot be written', async () => {
    const agentId = (await t.agent(key)).id;
    const before = await Promise.all(['runs', 'conversations', 'messages', 'run_events'].map((table) => rowCount(table)));
    probed.length = 0;
    // The start's INSERT into messages fails while the table is away.
    await sql`alter table messages rename to messages_away`.execute(t.db.kysely);
    let res: Awaited<ReturnType<typeof execute>>;
    try {
      res = await execute(t, key, agentId, { message: '/tool probe {}' });
    } finally {
      await sql`alter table messages_away rename to messages`.execute(t.db.kysely);
    }
    expectProblem(res, 500, 'internal_error');
    expect(probed).toEqual([]);
    const after = await Promise.all(['runs', 'conversations', 'messages', 'run_events'].map((table) => rowCount(table)));
    expect(after).toEqual(before);
    expect(t.services.runs.activeCount).toBe(0);

    // And the next run goes through.
    const next = await execute(t, key, agentId, { message: 'still here' });
    expect(next.response.status, JSON.stringify(next.error)).toBe(200);
    expect(next.data!.output).toBe('still here');
  });
});

async function rowCount(table: string): Promise<number> {
  const r = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(t.db.kysely);
  return Number(r.rows[0].n);
}

describe('a retry with its Idempotency-Key', () => {
  it('is answered from the key before the request is checked or looked up again: the first run, though the agent is deleted since', async () => {
    const agent = await t.agent(key);
    const api = t.api(key);
    const header = (name: string) => ({ 'idempotency-key': `${name}-${agent.id}` });
    const execute = (name: string) =>
      api.POST('/api/v1/agents/{id}/execute', { params: { path: { id: agent.id }, header: header(name) }, body: { message: 'once' } });
    const first = await execute('execute');
    expect(first.response.status, JSON.stringify(first.error)).toBe(200);
    const conversationId = first.response.headers.get('x-conversation-id')!;
    const post = (name: string) =>
      api.POST('/api/v1/conversations/{id}/messages', {
        params: { path: { id: conversationId }, header: header(name) },
        body: { content: 'and again' },
      });
    const posted = await post('message');
    expect(posted.response.status, JSON.stringify(posted.error)).toBe(200);
    const complete = (name: string) =>
      api.POST('/v1/chat/completions', {
        params: { header: header(name) },
        body: { model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'once more' }] },
      });
    const completed = await complete('completion');
    expect(completed.response.status, JSON.stringify(completed.error)).toBe(200);

    const deleted = await api.DELETE('/api/v1/agents/{id}', { params: { path: { id: agent.id } } });
    expect(deleted.response.status).toBe(204);
    // Asked afresh, each is refused: the agent is gone.
    expectProblem(await execute('execute-new'), 404, 'not_found');
    expectProblem(await post('message-new'), 409, 'agent_deleted');
    expect((await complete('completion-new')).response.status).toBe(404);

    for (const [retry, original] of [
      [await execute('execute'), first],
      [await post('message'), posted],
      [await complete('completion'), completed],
    ] as const) {
      expect(retry.response.status).toBe(200);
      expect(retry.response.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.data).toEqual(original.data);
    }
    const runs = await api.GET('/api/v1/agents/{id}/runs', { params: { path: { id: agent.id }, query: { page: 1, limit: 20 } } });
    expect(runs.data!.total).toBe(3);
  });
});
