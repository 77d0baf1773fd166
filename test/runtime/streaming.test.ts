import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse, type SseEvent } from '../helpers/sse.js';
import { RETAIN_AFTER_END_MS, storedEvents } from '../../src/runs/events.js';

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

const text = (events: SseEvent[]) =>
  events
    .filter((e) => e.event === 'token')
    .map((e) => e.data.text)
    .join('');
const seqs = (events: SseEvent[]) => events.map((e) => Number(e.id));

const getRun = async (runId: string) => (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;
const runsOf = async (agentId: string) =>
  (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } })).data!.runs;

function waitForRun(runId: string, status: string) {
  return vi.waitFor(
    async () => {
      const run = await getRun(runId);
      if (run.status !== status) throw new Error(`run ${runId} never became ${status}`);
      return run;
    },
    { timeout: 10_000, interval: 50 },
  );
}

describe('SSE streaming', () => {
  it('streams tokens then done, each event with an increasing id', async () => {
    const a = await t.agent(key);
    for (const path of ['stream', 'chat']) {
      const res = await t.fetch(`/api/v1/agents/${a.id}/${path}`, key, { body: { message: 'streaming is fun' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = await readSse(res);
      expect(events.map((e) => e.event)).toEqual(['token', 'token', 'token', 'done']);
      expect(text(events)).toBe('streaming is fun');
      expect(seqs(events)).toEqual([1, 2, 3, 4]);
      const done = events.at(-1)!.data;
      expect(done).toMatchObject({ cost: 0, tokenUsage: { inputTokens: 3, outputTokens: 3 } });
      expect(await getRun(done.runId)).toMatchObject({
        status: 'completed',
        output: 'streaming is fun',
        conversationId: done.conversationId,
        kind: path,
      });
    }
  });

  it('streams execute when stream is true', async () => {
    const a = await t.agent(key);
    const res = await t.fetch(`/api/v1/agents/${a.id}/execute`, key, { body: { message: 'yes please', stream: true } });
    const events = await readSse(res);
    expect(events.map((e) => e.event)).toEqual(['token', 'token', 'done']);
  });

  it('streams a tool call as it happens', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const res = await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: '/tool add {"a":1,"b":2}' } });
    const events = await readSse(res);
    expect(events.map((e) => e.event)).toEqual(['tool_call_start', 'tool_call_end', 'token', 'token', 'token', 'done']);
    const [start, end] = events;
    expect(start.data).toEqual({ id: expect.any(String), name: 'add', input: { a: 1, b: 2 } });
    expect(end.data).toEqual({ id: start.data.id, result: { sum: 3 } });
    expect(text(events)).toBe('add returned {"sum":3}');
  });

  it('ends with an error event when the model fails', async () => {
    const a = await t.agent(key);
    const res = await t.fetch(`/api/v1/agents/${a.id}/chat`, key, { body: { message: '/fail no luck' } });
    const events = await readSse(res);
    expect(events).toEqual([{ id: '1', event: 'error', data: { code: 'model_error', message: 'no luck' } }]);
  });

  it('answers problems (not a stream) when the request is refused', async () => {
    const a = await t.agent(key);
    await t.api(key).POST('/api/v1/agents/{id}/pause', { params: { path: { id: a.id } } });
    const res = await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: 'hi' } });
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('replays what a reconnecting client missed with Last-Event-ID, losing and duplicating nothing', async () => {
    const a = await t.agent(key);
    const words = Array.from({ length: 12 }, (_, i) => `w${i}`).join(' ');
    const controller = new AbortController();
    const res = await t.fetch(`/api/v1/agents/${a.id}/stream`, key, {
      body: { message: `/delay 40\n${words}` },
      signal: controller.signal,
    });
    const first = await readSse(res, { stopAfter: (ev) => ev.length === 4, controller });
    expect(seqs(first)).toEqual([1, 2, 3, 4]);

    // The client went away; the run goes on. Find the run and reconnect from event 4.
    const runs = await runsOf(a.id);
    const runId = runs[0].id;
    expect(runs[0].status).toBe('running');
    const again = await t.fetch(`/api/v1/runs/${runId}/events`, key, { headers: { 'last-event-id': '4' } });
    const rest = await readSse(again);
    const all = [...first, ...rest];
    expect(seqs(all)).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    expect(text(all)).toBe(words);
    expect(all.at(-1)!.event).toBe('done');

    // Just after the end, a replay comes from the run's events kept in memory.
    expect(t.services.runs.events.get(runId)).toBeDefined();
    const replay = await readSse(await t.fetch(`/api/v1/runs/${runId}/events?lastEventId=10`, key));
    expect(seqs(replay)).toEqual([11, 12, 13]);
  });

  it('replays a run that ended a while ago from the database: the same events, from any point', async () => {
    const a = await t.agent(key);
    const words = Array.from({ length: 9 }, (_, i) => `v${i}`).join(' ');
    const live = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: words } }));
    expect(live.at(-1)!.event).toBe('done');
    expect(text(live)).toBe(words);
    const runId = String(live.at(-1)!.data.runId);
    // Kept in memory only briefly after the end (runs/events.ts); then only the database has them.
    await vi.waitFor(() => expect(t.services.runs.events.get(runId)).toBeUndefined(), { timeout: RETAIN_AFTER_END_MS + 300, interval: 50 });
    const whole = await readSse(await t.fetch(`/api/v1/runs/${runId}/events`, key));
    expect(whole).toEqual(live);
    const rest = await readSse(await t.fetch(`/api/v1/runs/${runId}/events`, key, { headers: { 'last-event-id': '7' } }));
    expect(rest).toEqual(live.slice(7));
    expect(seqs(rest)).toEqual(seqs(live).filter((seq) => seq > 7));
  });

  it('keeps a streamed run in memory for reconnects after its end, and replays an unfollowed one from the database', async () => {
    const a = await t.agent(key);
    const live = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: 'followed live' } }));
    expect(t.services.runs.events.get(String(live.at(-1)!.data.runId))).toBeDefined();
    // Answered as JSON: nobody followed it, so nobody can be reconnecting; it is not kept.
    const res = await execute(t.api(key), a.id, { message: 'answered whole' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const { runId } = res.run!;
    expect(t.services.runs.events.get(runId)).toBeUndefined();
    const replayed = await readSse(await t.fetch(`/api/v1/runs/${runId}/events`, key));
    expect(replayed.map((e) => e.event)).toEqual(['token', 'token', 'done']);
    expect(text(replayed)).toBe('answered whole');
    expect(seqs(replayed)).toEqual([1, 2, 3]);
  });

  it('streams many runs at once: each gets its own events in order, and the stored log is what was streamed', async () => {
    // The events of all runs are written together (one statement per turn of the event loop) and
    // the runs' ends several to a transaction: nothing may cross from one run to another.
    const a = await t.agent(key);
    const messages = Array.from({ length: 24 }, (_, i) => Array.from({ length: 3 + (i % 5) }, (_, j) => `r${i}w${j}`).join(' '));
    // Some tokens arrive over time, so writes of several turns interleave with other runs' ends.
    const sent = messages.map((message, i) => (i % 3 === 0 ? `/delay 5\n${message}` : message));
    const streams = await Promise.all(
      sent.map(async (message) => readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message } }))),
    );
    for (const [i, events] of streams.entries()) {
      const words = messages[i].split(' ');
      expect(events.map((e) => e.event)).toEqual([...words.map(() => 'token'), 'done']);
      expect(seqs(events)).toEqual(events.map((_, j) => j + 1));
      expect(text(events)).toBe(messages[i]);
      const { runId, conversationId } = events.at(-1)!.data;
      const stored = await t.db.kysely
        .selectFrom('run_events')
        .select(['seq', 'event', 'data'])
        .where('run_id', '=', runId)
        .orderBy('seq')
        .execute();
      expect(storedEvents(stored).map((e) => ({ id: String(e.seq), event: e.event, data: e.data }))).toEqual(events);
      expect(await getRun(runId)).toMatchObject({ status: 'completed', output: messages[i], conversationId });
      const history = await t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path: { id: conversationId } } });
      expect(history.data!.messages.map((m) => [m.role, m.content])).toEqual([
        ['user', sent[i]],
        ['assistant', messages[i]],
      ]);
    }
  });

  it('stores a long burst of tokens whole, as few rows', async () => {
    const a = await t.agent(key);
    // 300 tokens emitted in one turn: one row of tokens (runs/events.ts eventRows), then the end's.
    const message = Array.from({ length: 300 }, (_, i) => `t${i}`).join(' ');
    const events = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message } }));
    expect(events).toHaveLength(301);
    expect(seqs(events)).toEqual(events.map((_, j) => j + 1));
    expect(text(events)).toBe(message);
    const { runId } = events.at(-1)!.data;
    const stored = await t.db.kysely
      .selectFrom('run_events')
      .select(['seq', 'event', 'data'])
      .where('run_id', '=', runId)
      .orderBy('seq')
      .execute();
    expect(storedEvents(stored).map((e) => ({ id: String(e.seq), event: e.event, data: e.data }))).toEqual(events);
    expect(stored.length).toBeLessThanOrEqual(3);
  });

  it('keeps running when the client disconnects', async () => {
    const a = await t.agent(key);
    const controller = new AbortController();
    const res = await t.fetch(`/api/v1/agents/${a.id}/stream`, key, {
      body: { message: '/delay 30\na b c d e f' },
      signal: controller.signal,
    });
    const first = await readSse(res, { stopAfter: (ev) => ev.length === 1, controller });
    expect(first).toHaveLength(1);
    const run = await waitForRun((await runsOf(a.id))[0].id, 'completed');
    expect(run.output).toBe('a b c d e f');
  });
});
