import net from 'node:net';
import { Agentry, AgentryError } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

// The SDK's transport's edges (openapi-fetch with middleware), over a real socket against the app.
let t: TestApp;
let base: string;
let key: string;
let client: Agentry;

beforeAll(async () => {
  t = await startApp();
  key = (await t.tenant()).key;
  base = await t.listen();
  client = new Agentry({ baseUrl: base, apiKey: key });
});
afterAll(() => t?.close());

const echo = (name: string, extra: object = {}) => client.agents.create({ name, appId: 'sdk-resources', model: 'builtin/echo', ...extra });

describe('the typed client (client.api) and its middleware', () => {
  it('reaches any operation by path and verb; a failure rejects with the problem as an AgentryError', async () => {
    const agent = await echo('Low level');
    const { data } = await client.api.GET('/api/v1/agents/{id}', { params: { path: { id: agent.id } } });
    expect(data).toMatchObject({ id: agent.id, name: 'Low level' });
    const invalid = await client.api.POST('/api/v1/agents', { body: { appId: 'x' } as never }).catch((e) => e);
    expect(invalid).toBeInstanceOf(AgentryError);
    expect(invalid).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(invalid.errors.map((e: { path: string }) => e.path).join(' ')).toContain('name');
  });

  it('an abort rejects with an AgentryError of code aborted, before the request and while waiting to retry', async () => {
    const before = new AbortController();
    before.abort();
    const early = await client.agents.get('01a00000-0000-7000-8000-000000000000', { signal: before.signal }).catch((e) => e);
    expect(early).toBeInstanceOf(AgentryError);
    expect(early).toMatchObject({ status: 0, code: 'aborted' });

    const during = new AbortController();
    const sdk = new Agentry({
      baseUrl: base,
      apiKey: key,
      fetch: async () =>
        new Response(JSON.stringify({ status: 503, code: 'unavailable' }), {
          status: 503,
          headers: { 'content-type': 'application/problem+json', 'retry-after': '5' },
        }),
      // The abort comes while the client waits out Retry-After.
      wait: (_ms, signal) => {
        during.abort();
        return Promise.reject(signal?.reason);
      },
    });
    const waiting = await sdk.agents
      .list({}, { signal: during.signal })
      .toArray()
      .catch((e) => e);
    expect(waiting).toBeInstanceOf(AgentryError);
    expect(waiting).toMatchObject({ status: 0, code: 'aborted' });
  });

  it('a server that cannot be reached is a network_error naming the URL', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const waits: number[] = [];
    const sdk = new Agentry({ baseUrl: `http://127.0.0.1:${port}`, apiKey: key, wait: async (ms) => void waits.push(ms) });
    const failure = await sdk.agents.get('abc').catch((e) => e);
    expect(failure).toBeInstanceOf(AgentryError);
    expect(failure).toMatchObject({ status: 0, code: 'network_error' });
    expect(failure.detail).toContain(`GET http://127.0.0.1:${port}/api/v1/agents/abc`);
    expect(failure.message).toContain(`http://127.0.0.1:${port}/api/v1/agents/abc`);
    // A GET is idempotent: retried (maxRetries, 3) before failing.
    expect(waits).toHaveLength(3);
  });

  it('a run start whose answer is lost is sent again with the same Idempotency-Key: one run', async () => {
    const agent = await echo('Once');
    const keys: (string | null)[] = [];
    let lose = 1;
    const sdk = new Agentry({
      baseUrl: base,
      apiKey: key,
      wait: async () => {},
      fetch: async (input, init) => {
        keys.push(new Headers(init?.headers).get('idempotency-key'));
        const response = await fetch(input, init);
        // The server ran it, but the answer never arrives.
        if (lose-- > 0) {
          await response.body?.cancel();
          throw new TypeError('fetch failed');
        }
        return response;
      },
    });
    const { data } = await sdk.api.POST('/api/v1/agents/{id}/execute', {
      params: { path: { id: agent.id } },
      body: { message: 'just once' },
    });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    const runs = await client.agents.runs(agent.id).toArray();
    expect(runs.map((r) => r.id)).toEqual([(data as { runId: string }).runId]);
  });

  it('a 503 or a lost answer is not retried for a POST without an Idempotency-Key (it could act twice)', async () => {
    const sent: string[] = [];
    const sdk = new Agentry({
      baseUrl: base,
      apiKey: key,
      wait: async () => {},
      fetch: async (input, init) => {
        sent.push(`${init?.method} ${new URL(String(input)).pathname}`);
        return new Response(JSON.stringify({ status: 503, code: 'unavailable', detail: 'busy' }), {
          status: 503,
          headers: { 'content-type': 'application/problem+json' },
        });
      },
    });
    const failure = await sdk.agents.create({ name: 'x', appId: 'y', model: 'builtin/echo' }).catch((e) => e);
    expect(failure).toMatchObject({ status: 503, code: 'unavailable' });
    expect(sent).toEqual(['POST /api/v1/agents']);
    // A GET is retried.
    sent.length = 0;
    await sdk.agents.get('abc').catch(() => {});
    expect(sent).toHaveLength(4);
  });
});
