import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
const call = (s: ServerProcess, path: string, body?: unknown) =>
  fetch(`${s.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe('SIGTERM', () => {
  it('lets a running stream finish within the grace period, refuses new work, exits 0', async () => {
    const s = await server(10);
    const agent = (await (await call(s, '/api/v1/agents', { name: 'g', appId: 'x' })).json()) as { id: string };
    const res = await call(s, `/api/v1/agents/${agent.id}/stream`, { message: '/delay 100\none two three four five six seven eight' });
    const events = readSse(res);
    await new Promise((r) => setTimeout(r, 250));
    s.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    const refused = await call(s, '/api/v1/agents').catch(() => null);
    if (refused) {
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { code: string }).code).toBe('shutting_down');
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
    const agent = (await (await call(s, '/api/v1/agents', { name: 'h', appId: 'x' })).json()) as { id: string };
    const res = await call(s, `/api/v1/agents/${agent.id}/stream`, { message: '/delay 500\n' + 'slow '.repeat(40) });
    const events = readSse(res);
    await new Promise((r) => setTimeout(r, 700));
    const t0 = Date.now();
    s.child.kill('SIGTERM');
    const streamed = await events;
    expect(streamed.at(-1)).toMatchObject({ event: 'error', data: { code: 'interrupted' } });
    expect(await s.stop()).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);

    const next = await server(1);
    const runs = (await (await call(next, `/api/v1/agents/${agent.id}/runs`)).json()) as {
      runs: { status: string; error: { code: string }; output: string; conversationId: string }[];
    };
    expect(runs.runs[0]).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    expect(runs.runs[0].output.startsWith('slow ')).toBe(true);
    // Its conversation is free for the next message right away (no lease to wait out).
    const again = await call(next, `/api/v1/conversations/${runs.runs[0].conversationId}/messages`, { content: 'hello again' });
    expect(again.status).toBe(200);
  });

  it('loses no acknowledged write under load', async () => {
    const s = await server(5);
    const acknowledged: string[] = [];
    let stop = false;
    const worker = async (w: number) => {
      for (let i = 0; !stop && i < 500; i++) {
        try {
          const res = await call(s, '/api/v1/agents', { name: `load-${w}-${i}`, appId: 'load' });
          if (res.status === 201) acknowledged.push(((await res.json()) as { id: string }).id);
          else await res.arrayBuffer();
        } catch {
          // Connection refused or reset once the server is gone: not acknowledged, fine.
          if (s.child.exitCode !== null || s.child.signalCode !== null) return;
        }
      }
    };
    const workers = Array.from({ length: 8 }, (_, w) => worker(w));
    await new Promise((r) => setTimeout(r, 600));
    s.child.kill('SIGTERM');
    const code = await s.stop();
    stop = true;
    await Promise.all(workers);
    expect(code).toBe(0);
    expect(acknowledged.length).toBeGreaterThan(10);

    const check = await server(1);
    const stored = new Set<string>();
    for (let page = 1; ; page++) {
      const res = (await (await call(check, `/api/v1/agents?appId=load&limit=100&page=${page}`)).json()) as { agents: { id: string }[] };
      for (const a of res.agents) stored.add(a.id);
      if (res.agents.length < 100) break;
    }
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
  });
});
