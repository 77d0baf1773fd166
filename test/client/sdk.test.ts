import net from 'node:net';
import { Agentry, AgentryError, type RunEvent } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type TestProcess } from '../helpers/app.js';
import { cli } from '../helpers/process.js';

// The SDK (packages/client) against the built server as a real process, over real sockets.
let proc: TestProcess;
let client: Agentry;
let apiKey: string;

beforeAll(async () => {
  proc = await startProcess({ LOG_LEVEL: 'silent' });
  const created = await cli(['tenants', 'create', 'SDK', '--json'], proc.database.env);
  expect(created.code, created.stderr).toBe(0);
  apiKey = JSON.parse(created.stdout).apiKey;
  client = new Agentry({ baseUrl: proc.url, apiKey });
});
afterAll(() => proc?.close());

async function collect(stream: AsyncIterable<RunEvent>) {
  const events: RunEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/**
 * A TCP proxy in front of the server that cuts its first `cuts` connections in the middle of their
 * `cutAt`-th token event (`cutAt` 0: at the server's first byte, before the response's head).
 */
async function startCuttingProxy(target: URL, cutAt: number, cuts = 1) {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((downstream) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    const cutting = ++connections <= cuts;
    sockets.add(downstream).add(upstream);
    downstream.pipe(upstream);
    let seen = '';
    upstream.on('data', (chunk: Buffer) => {
      if (!cutting) return void downstream.write(chunk);
      if (cutAt === 0) return drop();
      const before = seen.length;
      seen += chunk.toString('latin1');
      let at = -1;
      for (let i = 0; i < cutAt; i++) {
        at = seen.indexOf('event: token', at + 1);
        if (at < 0) break;
      }
      if (at < 0) return void downstream.write(chunk);
      // Half of the event goes through, then the connection is gone.
      downstream.write(chunk.subarray(0, at + 8 - before), () => {
        downstream.destroy();
        upstream.destroy();
      });
    });
    const drop = () => {
      downstream.destroy();
      upstream.destroy();
    };
    downstream.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('typed calls and errors', () => {
  it('creates, reads, updates, lists and deletes an agent', async () => {
    const agent = await client.agents.create({ name: 'Support', appId: 'sdk-crud', model: 'builtin/echo' });
    expect(agent).toMatchObject({ name: 'Support', appId: 'sdk-crud', model: 'builtin/echo', status: 'available' });
    expect(await client.agents.get(agent.id)).toEqual(agent);
    const renamed = await client.agents.update(agent.id, { name: 'Helpdesk' });
    expect(renamed.name).toBe('Helpdesk');
    expect((await client.agents.pause(agent.id)).status).toBe('paused');
    expect((await client.agents.resume(agent.id)).status).toBe('available');
    const result = await client.agents.execute(agent.id, { message: 'hello there' });
    expect(result).toMatchObject({ output: 'hello there', status: 'completed', runId: expect.any(String) });
    expect((await client.runs.get(result.runId)).status).toBe('completed');
    expect((await client.conversations.get(result.conversationId)).id).toBe(result.conversationId);
    const messages = [];
    for await (const m of client.conversations.messages(result.conversationId, { limit: 1 })) messages.push(m);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['assistant', 'hello there'],
      ['user', 'hello there'],
    ]);
    expect(await client.agents.delete(agent.id)).toBeUndefined();
    const audit = await client.audit.list({ resourceId: agent.id }).toArray();
    expect(audit.map((e) => e.action)).toContain('agent.deleted');
  });

  it('tasks, skills and identity answer typed', async () => {
    const agent = await client.agents.create({ name: 'Worker', appId: 'sdk-more', model: 'builtin/echo' });
    const task = await client.tasks.create({
      name: 'Yearly',
      description: 'once a year',
      agentId: agent.id,
      type: 'scheduled',
      schedule: '0 0 1 1 *',
    });
    expect(await client.tasks.get(task.id)).toMatchObject({ id: task.id, name: 'Yearly', agentId: agent.id });
    expect((await client.tasks.list({ agentId: agent.id }).toArray()).map((t) => t.id)).toEqual([task.id]);
    await client.tasks.delete(task.id);
    expect(await client.tasks.get(task.id).catch((e) => e)).toMatchObject({ status: 404 });

    const skill = await client.skills.create({ name: 'sdk-skill', description: 'a skill', instructions: 'Be brief.' });
    expect(await client.skills.get(skill.id)).toMatchObject({ id: skill.id, name: 'sdk-skill' });
    expect((await client.skills.list({ q: 'sdk-skill' }).toArray()).map((s) => s.id)).toContain(skill.id);

    const before = (await client.identity.keys(agent.id)).keys;
    await client.identity.rotateKey(agent.id);
    expect((await client.identity.keys(agent.id)).keys.length).toBeGreaterThan(before.length);
    expect(await client.identity.policies().toArray()).toEqual([]);
  });

  it('reads and changes an agent’s memory blocks, agent-wide and per user', async () => {
    const agent = await client.agents.create({ name: 'Rememberer', appId: 'sdk-memory', model: 'builtin/echo' });
    const made = await client.agents.memory.set(agent.id, 'persona', { value: 'You are Ada.' });
    expect(made).toMatchObject({ label: 'persona', userId: null, value: 'You are Ada.', version: 1 });
    await client.agents.memory.set(agent.id, 'persona', { value: 'You are Ada, terse.', version: 1 });
    await client.agents.memory.set(agent.id, 'prefs', { value: 'Metric units.' }, { userId: 'user-42' });
    expect((await client.agents.memory.list(agent.id)).blocks.map((b) => b.label)).toEqual(['persona']);
    expect(await client.agents.memory.get(agent.id, 'prefs', { userId: 'user-42' })).toMatchObject({
      userId: 'user-42',
      value: 'Metric units.',
    });
    const versions = await client.agents.memory.versions(agent.id, 'persona', { limit: 1 }).toArray();
    expect(versions.map((v) => [v.version, v.change])).toEqual([
      [2, 'set'],
      [1, 'created'],
    ]);
    expect(await client.agents.memory.delete(agent.id, 'prefs', { userId: 'user-42' })).toBeUndefined();
    const gone = await client.agents.memory.get(agent.id, 'prefs', { userId: 'user-42' }).catch((e) => e);
    expect(gone).toMatchObject({ status: 404, code: 'not_found' });
    const { output } = await client.agents.execute(agent.id, { message: '/system', userId: 'user-42' });
    expect(output).toContain('You are Ada, terse.');
  });

  it('refuses `.` and `..` as an id before any request, in every method (`..` would name the parent resource)', async () => {
    const sent: string[] = [];
    const counting = new Agentry({
      baseUrl: proc.url,
      apiKey,
      fetch: (input, init) => {
        sent.push(String(input));
        return fetch(input, init);
      },
    });
    const calls = [
      () => counting.agents.get('..'),
      () => counting.agents.budget('..'),
      () => counting.agents.setBudget('.', { monthlyBudgetUsd: 1 }),
      () => counting.skills.forAgent('..'),
      () => counting.api.GET('/api/v1/agents/{id}/runs', { params: { path: { id: '..' } } }),
    ];
    for (const call of calls) await expect(call()).rejects.toThrow('cannot be an id in a path');
    expect(sent).toEqual([]);
    // An id that merely holds dots is sent, percent-encoded where it must be.
    await expect(counting.agents.budget('a..b')).rejects.toMatchObject({ status: 404 });
    expect(sent).toHaveLength(1);
  });

  it('a 400 is an AgentryError naming the field; a 404 carries its code', async () => {
    const invalid = await client.agents.create({ appId: 'x' } as never).catch((e) => e);
    expect(invalid).toBeInstanceOf(AgentryError);
    expect(invalid).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(invalid.detail).toEqual(expect.any(String));
    expect(invalid.errors.map((e: { path: string }) => e.path).join(' ')).toContain('name');
    const missing = await client.agents.get('01a00000-0000-7000-8000-000000000000').catch((e) => e);
    expect(missing).toBeInstanceOf(AgentryError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found', errors: [] });
  });

  it('iterates every page of a filtered list', async () => {
    const ids = [];
    for (let i = 0; i < 7; i++)
      ids.push((await client.agents.create({ name: `paged-${i}`, appId: 'sdk-pages', model: 'builtin/echo' })).id);
    await client.agents.pause(ids[6]);
    const seen = [];
    for await (const agent of client.agents.list({ appId: 'sdk-pages', status: 'available', limit: 2 })) seen.push(agent.id);
    expect(seen.sort()).toEqual(ids.slice(0, 6).sort());
    const pages = [];
    for await (const page of client.agents.list({ appId: 'sdk-pages', limit: 3 }).pages()) pages.push(page.items.length);
    expect(pages).toEqual([3, 3, 1]);
  });

  it('retries a 429 after its Retry-After, and no other status', async () => {
    const limited = await client.apiKeys.create({ name: 'limited', permissions: ['agents:read'] });
    await client.apiKeys.update(limited.apiKey.id, { rateLimitPerMinute: 1 });
    const statuses: number[] = [];
    const waits: number[] = [];
    let retryAfter = '';
    const sdk = new Agentry({
      baseUrl: proc.url,
      apiKey: limited.key,
      maxRetryDelayMs: 60_000,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        statuses.push(response.status);
        if (response.status === 429) retryAfter = response.headers.get('retry-after') ?? '';
        return response;
      },
      // Instead of sleeping up to a minute: note the wait, then lift the key's limit.
      wait: async (ms) => {
        waits.push(ms);
        await client.apiKeys.update(limited.apiKey.id, { rateLimitPerMinute: null });
      },
    });
    expect((await sdk.agents.list().pages().next()).value).toMatchObject({ page: 1 });
    expect((await sdk.agents.list().pages().next()).value).toMatchObject({ page: 1 });
    expect(statuses).toEqual([200, 429, 200]);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    expect(waits).toEqual([Number(retryAfter) * 1000]);

    // A 403 (the key cannot write) is answered at once.
    statuses.length = 0;
    const forbidden = await sdk.agents.create({ name: 'x', appId: 'y' }).catch((e) => e);
    expect(forbidden).toMatchObject({ status: 403 });
    expect(statuses).toEqual([403]);
  });

  it('calls that start work send one Idempotency-Key, the same on a retry after a 503; a caller’s key wins', async () => {
    const agent = await client.agents.create({ name: 'Keyed', appId: 'sdk-keys', model: 'builtin/echo' });
    const sent: { url: string; key: string | null }[] = [];
    let unavailable = 1;
    const sdk = new Agentry({
      baseUrl: proc.url,
      apiKey,
      wait: async () => {},
      fetch: async (input, init) => {
        sent.push({ url: String(input), key: new Headers(init?.headers).get('idempotency-key') });
        if (String(input).endsWith('/execute') && unavailable-- > 0)
          return new Response(JSON.stringify({ status: 503, code: 'unavailable' }), {
            status: 503,
            headers: { 'content-type': 'application/problem+json', 'retry-after': '0' },
          });
        return fetch(input, init);
      },
    });
    const result = await sdk.agents.execute(agent.id, { message: 'once only' });
    expect(sent).toHaveLength(2);
    expect(sent[0].key).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1].key).toBe(sent[0].key);
    expect((await client.agents.runs(agent.id).toArray()).map((r) => r.id)).toEqual([result.runId]);

    // Another call, another key; a key the caller gives (option or header) is the one sent.
    const firstKey = sent[0].key;
    sent.length = 0;
    await sdk.agents.execute(agent.id, { message: 'twice' });
    await sdk.agents.execute(agent.id, { message: 'mine' }, { idempotencyKey: 'sdk-key-1' });
    await sdk.agents.execute(agent.id, { message: 'header' }, { headers: { 'Idempotency-Key': 'sdk-key-2' } });
    const conversation = await sdk.conversations.create({ agentId: agent.id });
    await sdk.conversations.send(conversation.id, { content: 'hi' });
    await sdk.runs.get(result.runId);
    await sdk.tasks.create({ name: 'Keyed', description: 'keyed', agentId: agent.id, type: 'scheduled', schedule: '0 0 1 1 *' });
    const keys = sent.map((s) => s.key);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[0]).not.toBe(firstKey);
    expect(keys.slice(1, 3)).toEqual(['sdk-key-1', 'sdk-key-2']);
    expect(keys[3]).toBeNull(); // creating a conversation starts no run
    expect(keys[4]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[5]).toBeNull(); // nor does a read
    expect(keys[6]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set([keys[0], keys[4], keys[6]]).size).toBe(3);
  });

  it('authenticates with client_credentials, fetching the token once', async () => {
    const made = await client.apiKeys.create({ name: 'oauth', permissions: ['agents:read', 'agents:write'] });
    const tokenRequests: string[] = [];
    const sdk = new Agentry({
      baseUrl: proc.url,
      clientCredentials: { clientId: made.apiKey.id, clientSecret: made.key, scope: 'agents:read' },
      fetch: (input, init) => {
        if (String(input).endsWith('/oauth/token')) tokenRequests.push(String(init?.body));
        return fetch(input, init);
      },
    });
    await sdk.agents.list().toArray();
    await sdk.agents.list().toArray();
    expect(tokenRequests).toHaveLength(1);
    expect(tokenRequests[0]).toContain('grant_type=client_credentials');
    // The token holds only the scope asked for.
    expect(await sdk.agents.create({ name: 'x', appId: 'y' }).catch((e) => e)).toMatchObject({ status: 403 });
  });
});

describe('streaming', () => {
  it('yields typed events in order and ends with done', async () => {
    const agent = await client.agents.create({ name: 'Streamer', appId: 'sdk-stream', model: 'builtin/echo' });
    const run = client.agents.stream(agent.id, { message: 'one two three' });
    const events = await collect(run);
    const runId = await run.runId();
    expect(events.map((e) => e.type)).toEqual(['token', 'token', 'token', 'done']);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    const done = events.at(-1)!;
    expect(done.type === 'done' && done.data).toMatchObject({ runId, conversationId: await run.conversationId() });
    const text = events.flatMap((e) => (e.type === 'token' ? [e.data.text] : [])).join('');
    expect(text).toBe((await client.runs.get(runId)).output);
  });

  it('resumes a stream cut mid-event through the run’s events: every event once, one run', async () => {
    const agent = await client.agents.create({ name: 'Dropped', appId: 'sdk-drop', model: 'builtin/echo' });
    const proxy = await startCuttingProxy(new URL(proc.url), 3);
    try {
      const sdk = new Agentry({ baseUrl: proxy.url, apiKey });
      const run = sdk.agents.stream(agent.id, { message: '/delay 40\nalpha beta gamma delta epsilon zeta eta theta' });
      const events = await collect(run);
      expect(proxy.connections()).toBe(2);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'done')).toHaveLength(1);
      const text = events.flatMap((e) => (e.type === 'token' ? [e.data.text] : [])).join('');
      const runId = await run.runId();
      expect(text).toBe((await client.runs.get(runId)).output);
      expect(text).toContain('theta');
      const runs = await client.agents.runs(agent.id).toArray();
      expect(runs.map((r) => r.id)).toEqual([runId]);
    } finally {
      await proxy.close();
    }
  });

  it('runs.events resumes after lastEventId, also on a reconnect before any new event; a 204 ends it', async () => {
    const agent = await client.agents.create({ name: 'Replayed', appId: 'sdk-replay', model: 'builtin/echo' });
    const first = client.agents.stream(agent.id, { message: 'one two three four five' });
    const all = await collect(first);
    const runId = await first.runId();
    expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);

    // The replay's first connection breaks inside its first event (seq 3): the reconnect asks after 2 still.
    const proxy = await startCuttingProxy(new URL(proc.url), 1);
    try {
      const sdk = new Agentry({ baseUrl: proxy.url, apiKey });
      const events = await collect(sdk.runs.events(runId, { lastEventId: 2 }));
      expect(proxy.connections()).toBe(2);
      expect(events.map((e) => e.seq)).toEqual([3, 4, 5, 6]);
    } finally {
      await proxy.close();
    }

    // Up to date with a finished run: 204, no events, no reconnect.
    const requests: string[] = [];
    const sdk = new Agentry({
      baseUrl: proc.url,
      apiKey,
      fetch: (input, init) => {
        requests.push(String(input));
        return fetch(input, init);
      },
    });
    expect(await collect(sdk.runs.events(runId, { lastEventId: 6 }))).toEqual([]);
    expect(requests).toHaveLength(1);
  });

  it('each successful resume renews the reconnect budget: more drops than maxReconnects, each after progress', async () => {
    const agent = await client.agents.create({ name: 'Flaky', appId: 'sdk-flaky', model: 'builtin/echo' });
    // Seven connections cut inside their second token event, each after one new event; the budget is 3.
    const proxy = await startCuttingProxy(new URL(proc.url), 2, 7);
    try {
      const sdk = new Agentry({ baseUrl: proxy.url, apiKey, wait: async () => {} });
      const words = 'a b c d e f g h i j k l m n';
      const run = sdk.agents.stream(agent.id, { message: `/delay 20\n${words}` }, { maxReconnects: 3 });
      const events = await collect(run);
      expect(proxy.connections()).toBe(8);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'done')).toHaveLength(1);
      expect(events.flatMap((e) => (e.type === 'token' ? [e.data.text] : [])).join('')).toBe(
        (await client.runs.get(await run.runId())).output,
      );
    } finally {
      await proxy.close();
    }
  });

  it('a stream whose first POST is cut before its answer is sent again with its Idempotency-Key: every event once, one run', async () => {
    const agent = await client.agents.create({ name: 'Cut early', appId: 'sdk-cut-early', model: 'builtin/echo' });
    const proxy = await startCuttingProxy(new URL(proc.url), 0);
    try {
      const keys: (string | null)[] = [];
      const sdk = new Agentry({
        baseUrl: proxy.url,
        apiKey,
        wait: async () => {},
        fetch: (input, init) => {
          keys.push(new Headers(init?.headers).get('idempotency-key'));
          return fetch(input, init);
        },
      });
      const run = sdk.agents.stream(agent.id, { message: '/delay 20\nalpha beta gamma' });
      const events = await collect(run);
      expect(proxy.connections()).toBe(2);
      expect(keys).toHaveLength(2);
      expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect(keys[1]).toBe(keys[0]);
      expect(events.map((e) => e.type)).toEqual(['token', 'token', 'token', 'done']);
      expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
      const runs = await client.agents.runs(agent.id).toArray();
      expect(runs.map((r) => r.id)).toEqual([await run.runId()]);
    } finally {
      await proxy.close();
    }
  });

  it('an AbortSignal stops reading locally; run.cancel() cancels on the server', async () => {
    const agent = await client.agents.create({ name: 'Slow', appId: 'sdk-cancel', model: 'builtin/echo' });
    const message = '/delay 300\na b c d e f g h i j';

    const controller = new AbortController();
    const aborted = client.agents.stream(agent.id, { message }, { signal: controller.signal });
    const read: RunEvent[] = [];
    const failure = await (async () => {
      for await (const event of aborted) {
        read.push(event);
        controller.abort();
      }
    })().catch((e) => e);
    // As documented (AgentryError): an abort is an AgentryError of code aborted, the signal's reason its cause.
    expect(failure).toBeInstanceOf(AgentryError);
    expect(failure).toMatchObject({ status: 0, code: 'aborted', cause: { name: 'AbortError' } });
    expect(read).toHaveLength(1);
    await client.runs.cancel(await aborted.runId());

    const run = client.agents.stream(agent.id, { message });
    const events: RunEvent[] = [];
    for await (const event of run) {
      events.push(event);
      if (events.length === 1) expect((await run.cancel()).status).toBe('cancelled');
    }
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'cancelled' } });
    expect((await client.runs.get(await run.runId())).status).toBe('cancelled');
  });
});
