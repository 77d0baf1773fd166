import { fetchEventSource } from '@microsoft/fetch-event-source';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserShims } from '../helpers/browser-shims.js';
import { apiOf, expectProblem, startApp, startReplicas, type TestApp } from '../helpers/app.js';
import { type ExecuteBody, execute } from '../helpers/execute.js';
import { readSse, type SseEvent } from '../helpers/sse.js';

/**
 * Streams that survive a dropped connection (docs/runtime.md, "Streams and retries"), with stock
 * clients: `eventsource` on GET /runs/:runId/events, `@microsoft/fetch-event-source` on POST .../stream.
 */

let t: TestApp;
let key: string;
let base: string;

beforeAll(async () => {
  // A one-second heartbeat, so the idle-stream case does not wait 15 s.
  t = await startApp({ SSE_HEARTBEAT_SECONDS: '1' });
  ({ key } = await t.tenant('streams'));
  base = await t.listen();
});
afterAll(() => t?.close());

const WORDS = 'one two three four five six seven eight';
const SLOW = `/delay 60\n${WORDS}`;

type Received = SseEvent;

/** Every event received once, in order, and the whole answer: nothing lost, nothing repeated. */
function expectExactlyOnce(events: Received[]) {
  const ids = events.map((e) => Number(e.id));
  expect(ids).toEqual(ids.map((_, i) => i + 1));
  expect(
    events
      .filter((e) => e.event === 'token')
      .map((e) => e.data.text)
      .join(''),
  ).toBe(WORDS);
  expect(events.at(-1)?.event).toBe('done');
}

async function runsOfAgent(agentId: string) {
  const res = await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } });
  expect(res.response.status).toBe(200);
  return res.data!.total;
}

interface Calls {
  count: number;
  lastEventIds: (string | null)[];
  statuses: number[];
}

/**
 * A fetch for the clients: adds the API key, counts requests, and makes the first responses lose
 * their connection after `dropAfter[n]` events (the request is aborted, so the server's socket
 * closes, and the client reads a network error after that event).
 */
function droppingFetch(dropAfter: number[], calls: Calls) {
  return async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const n = calls.count++;
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${key}`);
    calls.lastEventIds.push(headers.get('last-event-id'));
    const upstream = new AbortController();
    init.signal?.addEventListener('abort', () => upstream.abort());
    const res = await fetch(input, { ...init, headers, signal: upstream.signal });
    calls.statuses.push(res.status);
    const limit = dropAfter[n];
    if (limit === undefined || !res.body) return res;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    const encoder = new TextEncoder();
    let buffer = '';
    let seen = 0;
    let cut = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (cut) {
          upstream.abort();
          controller.error(new TypeError('connection dropped'));
          return;
        }
        const { done, value } = await reader.read();
        if (done) return controller.close();
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0 && !cut; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end + 2);
          buffer = buffer.slice(end + 2);
          controller.enqueue(encoder.encode(block));
          if (/^id:/m.test(block) && ++seen >= limit) cut = true;
        }
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** Starts a slow streamed run and answers its id (from the header) while it is still running. */
async function startSlowRun(agentId: string) {
  const controller = new AbortController();
  const res = await t.fetch(`/api/v1/agents/${agentId}/stream`, key, { body: { message: SLOW }, signal: controller.signal });
  const runId = res.headers.get('x-run-id')!;
  controller.abort();
  await res.body?.cancel().catch(() => {});
  return runId;
}

describe('the run is named before the first event', () => {
  it('stream, chat and execute with stream:true answer X-Run-Id, X-Conversation-Id and Content-Location with the head', async () => {
    const agent = await t.agent(key);
    for (const [path, body] of [
      ['stream', { message: '/delay 300\nhello there' }],
      ['chat', { message: '/delay 300\nhello there' }],
      ['execute', { message: '/delay 300\nhello there', stream: true }],
    ] as const) {
      const res = await t.fetch(`/api/v1/agents/${agent.id}/${path}`, key, { body });
      // fetch resolves on the head; the first token is 300 ms away.
      const runId = res.headers.get('x-run-id');
      expect(runId).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.headers.get('x-conversation-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.headers.get('content-location')).toBe(`/api/v1/runs/${runId}/events`);
      const events = await readSse(res);
      expect(events.at(-1)?.data).toMatchObject({ runId, conversationId: res.headers.get('x-conversation-id') });
    }
  });

  it('a JSON execute answers X-Run-Id and X-Conversation-Id too', async () => {
    const agent = await t.agent(key);
    const res = await execute(t.api(key), agent.id, { message: 'hi' });
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get('x-run-id')).toBe(res.run!.runId);
    expect(res.response.headers.get('x-conversation-id')).toBe(res.run!.conversationId);
  });

  it('an idle stream gets a keep-alive comment', async () => {
    const agent = await t.agent(key);
    const comments: string[] = [];
    const res = await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { body: { message: '/delay 1500\nslow' } });
    const events = await readSse(res, { comments });
    expect(events.map((e) => e.event)).toEqual(['token', 'done']);
    expect(comments).toContain('keep-alive');
  });
});

describe('reconnecting to a run’s events', () => {
  it('answers 204 once the run has ended and Last-Event-ID is its last event', async () => {
    const agent = await t.agent(key);
    const res = await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { body: { message: 'a b c' } });
    const events = await readSse(res);
    const runId = res.headers.get('x-run-id')!;
    const last = events.at(-1)!.id!;
    const done = await t.fetch(`/api/v1/runs/${runId}/events`, key, { headers: { 'last-event-id': last } });
    expect(done.status).toBe(204);
    expect(await done.text()).toBe('');
    const before = await t.fetch(`/api/v1/runs/${runId}/events`, key, { headers: { 'last-event-id': String(Number(last) - 1) } });
    expect(before.status).toBe(200);
    expect(before.headers.get('x-run-id')).toBe(runId);
    expect((await readSse(before)).map((e) => e.event)).toEqual(['done']);
    const ended = await t.api(key).GET('/api/v1/runs/{runId}/events', {
      params: { path: { runId }, query: { lastEventId: Number(last) } },
      parseAs: 'text',
    });
    expect(ended.response.status).toBe(204);
  });

  it('does not answer 204 for an ended run whose closing event is not stored: the reconnect follows it', async () => {
    const agent = await t.agent(key);
    const res = await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { body: { message: 'a b c' } });
    const events = await readSse(res);
    const runId = res.headers.get('x-run-id')!;
    expect(events.at(-1)?.event).toBe('done');
    // The run's row has ended but its terminal event is missing, as after a recovery whose event write failed.
    await t.db.kysely.deleteFrom('run_events').where('run_id', '=', runId).where('event', '=', 'done').execute();
    const last = events.at(-2)!.id!;
    const reconnect = await t.fetch(`/api/v1/runs/${runId}/events`, key, { headers: { 'last-event-id': last } });
    expect(reconnect.status).toBe(200);
    await reconnect.text();
  });

  it('eventsource: a dropped connection resumes after Last-Event-ID, and after done the reconnect gets 204 and stops', async () => {
    const agent = await t.agent(key);
    const runId = await startSlowRun(agent.id);
    const calls: Calls = { count: 0, lastEventIds: [], statuses: [] };
    const received: Received[] = [];
    const source = new EventSource(`${base}/api/v1/runs/${runId}/events`, { fetch: droppingFetch([3], calls) });
    for (const type of ['token', 'done']) {
      source.addEventListener(type, (e) => received.push({ id: e.lastEventId, event: type, data: JSON.parse(e.data) }));
    }
    // Ends only when the client gives up for good: after the 204, not after a number of seconds.
    await new Promise<void>((resolve) => {
      source.onerror = () => {
        if (source.readyState === source.CLOSED) resolve();
      };
    });
    expectExactlyOnce(received);
    const lastId = received.at(-1)!.id;
    // The first request, the one after the drop (from event 3), the one after done (answered 204), and no other.
    expect(calls.lastEventIds).toEqual([null, '3', lastId]);
    expect(calls.statuses).toEqual([200, 200, 204]);
    expect(await runsOfAgent(agent.id)).toBe(1);
  }, 20_000);

  it('eventsource on a finished run replays it once, then stops at the 204', async () => {
    const agent = await t.agent(key);
    const res = await execute(t.api(key), agent.id, { message: WORDS });
    const calls: Calls = { count: 0, lastEventIds: [], statuses: [] };
    const received: string[] = [];
    const source = new EventSource(`${base}/api/v1/runs/${res.run!.runId}/events`, { fetch: droppingFetch([], calls) });
    source.addEventListener('done', (e) => received.push(e.lastEventId));
    await new Promise<void>((resolve) => {
      source.onerror = () => {
        if (source.readyState === source.CLOSED) resolve();
      };
    });
    expect(received).toHaveLength(1);
    expect(calls.statuses).toEqual([200, 204]);
  }, 20_000);
});

describe('Idempotency-Key', () => {
  it('fetch-event-source: a POST stream dropped mid-way is re-sent with the same key and resumes: one run, every event once', async () => {
    browserShims();
    const agent = await t.agent(key);
    const calls: Calls = { count: 0, lastEventIds: [], statuses: [] };
    const received: Received[] = [];
    const runIds: (string | null)[] = [];
    await fetchEventSource(`${base}/api/v1/agents/${agent.id}/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `stream-${agent.id}` },
      body: JSON.stringify({ message: SLOW }),
      fetch: droppingFetch([2, 4], calls),
      openWhenHidden: true,
      async onopen(res) {
        expect(res.status).toBe(200);
        runIds.push(res.headers.get('x-run-id'));
      },
      onmessage(e) {
        received.push({ id: e.id, event: e.event, data: JSON.parse(e.data) });
      },
      onerror() {
        return 20; // retry (the library's way: the interval in ms)
      },
    });
    expectExactlyOnce(received);
    expect(calls.lastEventIds).toEqual([null, '2', '6']);
    expect(new Set(runIds).size).toBe(1);
    expect(received.at(-1)?.data.runId).toBe(runIds[0]);
    expect(await runsOfAgent(agent.id)).toBe(1);
  }, 20_000);

  it('a retried JSON execute answers the original run’s result, marked as replayed', async () => {
    const agent = await t.agent(key);
    const header = { 'idempotency-key': 'order-42' };
    const first = await execute(t.api(key), agent.id, { message: 'just once' }, header);
    expect(first.response.status).toBe(200);
    expect(first.response.headers.get('idempotent-replayed')).toBeNull();
    const again = await execute(t.api(key), agent.id, { message: 'just once' }, header);
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(again.data).toEqual(first.data);
    expect(again.response.headers.get('x-run-id')).toBe(first.run!.runId);
    expect(await runsOfAgent(agent.id)).toBe(1);
    // Keys are per tenant: another tenant's same key starts its own run.
    const other = await t.tenant('other');
    const otherAgent = await t.agent(other.key);
    const theirs = await execute(t.api(other.key), otherAgent.id, { message: 'just once' }, header);
    expect(theirs.response.status).toBe(200);
    expect(theirs.run!.runId).not.toBe(first.run!.runId);
  });

  it('a retried stream without Last-Event-ID replays the run from its start', async () => {
    const agent = await t.agent(key);
    const headers = { 'idempotency-key': `replay-${agent.id}` };
    const first = await readSse(await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { headers, body: { message: WORDS } }));
    const res = await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { headers, body: { message: WORDS } });
    expect(res.headers.get('idempotent-replayed')).toBe('true');
    expect(await readSse(res)).toEqual(first);
    expect(await runsOfAgent(agent.id)).toBe(1);
  });

  it('the same key with another body is 422 idempotency_key_reused; a malformed key is 400 naming the header', async () => {
    const agent = await t.agent(key);
    const header = { 'idempotency-key': `reuse-${agent.id}` };
    expect((await execute(t.api(key), agent.id, { message: 'first' }, header)).response.status).toBe(200);
    const reused = await execute(t.api(key), agent.id, { message: 'second' }, header);
    expectProblem(reused, 422, 'idempotency_key_reused');
    expect(reused.error!.detail).toContain('Idempotency-Key');
    const elsewhere = await t.api(key).POST('/api/v1/agents/{id}/stream', {
      params: { path: { id: agent.id }, header },
      body: { message: 'first' },
      parseAs: 'text',
    });
    expectProblem(elsewhere, 422, 'idempotency_key_reused');
    for (const bad of ['x'.repeat(256), 'tab\there']) {
      const res = await execute(t.api(key), agent.id, { message: 'x' }, { 'idempotency-key': bad });
      expectProblem(res, 400, 'validation_failed');
      expect(JSON.stringify(res.error!.errors)).toContain('idempotency-key');
    }
    expect(await runsOfAgent(agent.id)).toBe(1);
  });

  it('task creation: a retry answers the original task (201, Idempotent-Replayed: true); another body is 422', async () => {
    const agent = await t.agent(key);
    const header = { 'idempotency-key': `task-${agent.id}` };
    const body = {
      agentId: agent.id,
      name: 'nightly',
      description: 'the nightly report',
      type: 'scheduled' as const,
      schedule: '0 3 * * *',
    };
    const create = (taskBody: typeof body) => t.api(key).POST('/api/v1/tasks', { params: { header }, body: taskBody });
    const first = await create(body);
    expect(first.response.status).toBe(201);
    const again = await create(body);
    expect(again.response.status).toBe(201);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(again.data!.id).toBe(first.data!.id);
    expectProblem(await create({ ...body, name: 'other' }), 422, 'idempotency_key_reused');
    const list = await t.api(key).GET('/api/v1/tasks', { params: { query: { agentId: agent.id } } });
    expect(list.data!.tasks.filter((task) => task.name === 'nightly')).toHaveLength(1);
  });

  it('a retried conversation message answers the original reply; one run', async () => {
    const agent = await t.agent(key);
    const conversation = await t.api(key).POST('/api/v1/conversations', { body: { agentId: agent.id } });
    expect(conversation.response.status).toBe(201);
    const path = { id: conversation.data!.id };
    const header = { 'idempotency-key': `message-${agent.id}` };
    const send = (content: string) =>
      t.api(key).POST('/api/v1/conversations/{id}/messages', { params: { path, header }, body: { content } });
    const first = await send('hello once');
    expect(first.response.status).toBe(200);
    const again = await send('hello once');
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(again.data).toEqual(first.data);
    expectProblem(await send('hello twice'), 422, 'idempotency_key_reused');
    expect(await runsOfAgent(agent.id)).toBe(1);
    const messages = await t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path } });
    expect(messages.data!.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('a retried message that joined a running run answers the same 202', async () => {
    const agent = await t.agent(key);
    const running = await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { body: { message: SLOW } });
    const conversationId = running.headers.get('x-conversation-id')!;
    const header = { 'idempotency-key': `inject-${agent.id}` };
    const body: ExecuteBody = { message: 'also this', conversationId, onActiveRun: 'inject' };
    const first = await execute(t.api(key), agent.id, body, header);
    expect(first.response.status).toBe(202);
    const again = await execute(t.api(key), agent.id, body, header);
    expect(again.response.status).toBe(202);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(again.data).toEqual(first.data);
    await readSse(running);
    expect(await runsOfAgent(agent.id)).toBe(1);
  });

  it('a request that started nothing leaves the key free for its retry', async () => {
    const agent = await t.agent(key);
    const header = { 'idempotency-key': `paused-${agent.id}` };
    const params = { path: { id: agent.id } };
    await t.api(key).POST('/api/v1/agents/{id}/pause', { params });
    expect((await execute(t.api(key), agent.id, { message: 'hi' }, header)).response.status).toBe(409);
    await t.api(key).POST('/api/v1/agents/{id}/resume', { params });
    const retried = await execute(t.api(key), agent.id, { message: 'hi' }, header);
    expect(retried.response.status).toBe(200);
    expect(retried.response.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('Idempotency-Key across replicas', () => {
  it('the same key sent to two replicas at once starts one run', async () => {
    const started = await startReplicas(2);
    try {
      const [a, b] = started.replicas;
      const { apiKey } = await a.services.tenancy.createTenant('replicas');
      const api = (on: typeof a) => apiOf(on.app, apiKey);
      const agent = (await api(a).POST('/api/v1/agents', { body: { name: 'a', appId: 'x' } })).data!;
      for (let round = 0; round < 3; round++) {
        const header = { 'idempotency-key': `both-${round}` };
        const answers = await Promise.all([a, b, a, b].map((on) => execute(api(on), agent.id, { message: SLOW }, header)));
        expect(answers.map((r) => r.response.status)).toEqual([200, 200, 200, 200]);
        expect(new Set(answers.map((r) => r.run?.runId)).size).toBe(1);
      }
      const runs = await api(a).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agent.id } } });
      expect(runs.data!.total).toBe(3);
    } finally {
      await started.close();
    }
  }, 30_000);
});
