import { Agentry, type AgentryError } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/app.js';
import { cli, startServer, type ServerProcess } from '../helpers/process.js';
import { readSse } from '../helpers/sse.js';

let database: TestDatabase;
let key: string;
const started: ServerProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  key = JSON.parse((await cli(['tenants', 'create', 'shutdown', '--json'], database.env)).stdout).apiKey;
});
afterAll(async () => {
  for (const s of started) await s.stop('SIGKILL');
  await database.drop();
});

async function server(grace: number) {
  const s = await startServer({ ...database.env, SHUTDOWN_GRACE_SECONDS: String(grace), LOG_LEVEL: 'warn' });
  started.push(s);
  return s;
}
/** The SDK on a server; no retries, so each call is one request (a refusal is seen as it is). */
const on = (s: ServerProcess) => new Agentry({ baseUrl: s.url, apiKey: key, maxRetries: 0 });

/** Streams a new run of `agentId` on `s`; its events read as they come (parseAs: 'stream'). */
const stream = async (s: ServerProcess, agentId: string, message: string) =>
  (
    await on(s).api.POST('/api/v1/agents/{id}/stream', {
      params: { path: { id: agentId } },
      body: { message },
      headers: { accept: 'text/event-stream' },
      parseAs: 'stream',
    })
  ).response;

/** Until `s` answers the agent's latest run as running. */
const running = (s: ServerProcess, agentId: string) =>
  vi.waitFor(
    async () => {
      const { data } = await on(s).api.GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId }, query: { limit: 1 } } });
      expect(data!.runs[0]?.status, 'a running run').toBe('running');
    },
    { timeout: 10_000, interval: 20 },
  );

describe('SIGTERM', () => {
  it('lets a running stream finish within the grace period, refuses new work, exits 0', async () => {
    const s = await server(10);
    const agent = await on(s).agents.create({ name: 'g', appId: 'x' });
    const events = readSse(await stream(s, agent.id, '/delay 100\none two three four five six seven eight'));
    await running(s, agent.id);
    s.child.kill('SIGTERM');
    // New work is refused once the server has seen the signal: a 503, or no connection at all.
    const refused = await vi.waitFor(
      async () => {
        const answer = await on(s)
          .api.GET('/api/v1/agents')
          .then(
            () => undefined,
            (err: AgentryError) => err,
          );
        expect(answer, 'a refusal').toBeDefined();
        return answer!;
      },
      { timeout: 5_000, interval: 20 },
    );
    if (refused.code !== 'network_error') {
      expect(refused.status).toBe(503);
      expect(refused.code).toBe('shutting_down');
    }
    const streamed = await events;
    expect(streamed.at(-1)!.event).toBe('done');
    expect(
      streamed
        .filter((e) => e.event === 'token')
        .map((e) => e.data.text)
        .join(''),
    ).toBe('one two three four five six seven eight');
    expect(await s.stop()).toBe(0);
  });

  it('ends runs still going after the grace period as interrupted, releasing them at once', async () => {
    const s = await server(1);
    const agent = await on(s).agents.create({ name: 'h', appId: 'x' });
    const events = readSse(await stream(s, agent.id, '/delay 500\n' + 'slow '.repeat(40)));
    // Its first token comes 500 ms after it starts, within the grace period.
    await running(s, agent.id);
    const t0 = Date.now();
    s.child.kill('SIGTERM');
    const streamed = await events;
    expect(streamed.at(-1)).toMatchObject({ event: 'error', data: { code: 'interrupted' } });
    expect(await s.stop()).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);

    const next = await server(1);
    const runs = (await on(next).api.GET('/api/v1/agents/{id}/runs', { params: { path: { id: agent.id } } })).data!;
    expect(runs.runs[0]).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    expect(runs.runs[0].output!.startsWith('slow ')).toBe(true);
    // Its conversation is free for the next message right away (no lease to wait out).
    const again = await on(next).api.POST('/api/v1/conversations/{id}/messages', {
      params: { path: { id: runs.runs[0].conversationId! } },
      body: { content: 'hello again' },
    });
    expect(again.response.status).toBe(200);
  });

  it('loses no acknowledged write under load', async () => {
    const s = await server(5);
    const acknowledged: string[] = [];
    let stop = false;
    const client = on(s);
    const worker = async (w: number) => {
      for (let i = 0; !stop && i < 500; i++) {
        try {
          const res = await client.api.POST('/api/v1/agents', { body: { name: `load-${w}-${i}`, appId: 'load' } });
          if (res.response.status === 201) acknowledged.push(res.data!.id);
        } catch {
          // Refused (503), or connection refused or reset once the server is gone: not acknowledged, fine.
          if (s.child.exitCode !== null || s.child.signalCode !== null) return;
        }
      }
    };
    const workers = Array.from({ length: 8 }, (_, w) => worker(w));
    // Under load: writes are being acknowledged when the signal comes.
    await vi.waitFor(() => expect(acknowledged.length).toBeGreaterThan(10), { timeout: 10_000, interval: 20 });
    s.child.kill('SIGTERM');
    const code = await s.stop();
    stop = true;
    await Promise.all(workers);
    expect(code).toBe(0);
    expect(acknowledged.length).toBeGreaterThan(10);

    const check = await server(1);
    const stored = new Set((await on(check).agents.list({ appId: 'load', limit: 100 }).toArray()).map((a) => a.id));
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
  });
});
