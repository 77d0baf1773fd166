import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialect, type TestDatabase } from '../helpers/app.js';
import { cli, startServer, type ServerProcess } from '../helpers/process.js';
import { readSse } from '../helpers/sse.js';

/**
 * Three real server processes on one PostgreSQL database behave as one platform: signals cross
 * replicas with LISTEN/NOTIFY. (Replicas need PostgreSQL; SQLite is the one-process embedded mode.)
 */
describe.skipIf(dialect !== 'postgres')('replicas on one PostgreSQL database', () => {
  let database: TestDatabase;
  let servers: ServerProcess[] = [];
  let key: string;
  let agentId: string;

  const call = (s: ServerProcess, path: string, body?: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${s.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });

  async function runningRun(s: ServerProcess) {
    for (let i = 0; i < 100; i++) {
      const runs = (await (await call(s, `/api/v1/agents/${agentId}/runs?limit=1`)).json()) as { runs: { id: string; status: string; conversationId: string }[] };
      if (runs.runs[0]?.status === 'running') return runs.runs[0];
      await new Promise((r) => setTimeout(r, 30));
    }
    throw new Error('no running run');
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = { ...database.env, RUN_LEASE_SECONDS: '2', LOG_LEVEL: 'warn' };
    servers = await Promise.all([startServer(env), startServer(env), startServer(env)]);
    key = JSON.parse((await cli(['tenants', 'create', 'replicas', '--json'], env)).stdout).apiKey;
    agentId = ((await (await call(servers[0], '/api/v1/agents', { name: 'r', appId: 'x' })).json()) as { id: string }).id;
  });
  afterAll(async () => {
    for (const s of servers) await s.stop('SIGKILL');
    await database?.drop();
  });

  it('streams on A, cancels through B at once', async () => {
    const [a, b] = servers;
    const res = await call(a, `/api/v1/agents/${agentId}/stream`, { message: '/delay 300\n' + 'word '.repeat(40) });
    const events = readSse(res);
    const run = await runningRun(b);
    const started = Date.now();
    const cancelled = (await (await call(b, `/api/v1/runs/${run.id}/cancel`, {})).json()) as { status: string };
    expect(cancelled.status).toBe('cancelled');
    // Through NOTIFY, not the lease-renewal fallback (which would take ~700 ms or more).
    expect(Date.now() - started).toBeLessThan(1500);
    const streamed = await events;
    expect(streamed.at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled' } });
  });

  it('injects through C into a run on A', async () => {
    const [a, , c] = servers;
    const res = await call(a, `/api/v1/agents/${agentId}/stream`, { message: '/delay 150\none two three four five six' });
    const events = readSse(res);
    const run = await runningRun(c);
    const inj = await call(c, `/api/v1/conversations/${run.conversationId}/inject`, { content: 'from C' });
    expect(inj.status).toBe(202);
    const streamed = await events;
    expect(streamed.at(-1)!.event).toBe('done');
    const details = (await (await call(c, `/api/v1/runs/${run.id}`)).json()) as { output: string; steps: { injected: string[] }[] };
    expect(details.steps.flatMap((s) => s.injected)).toEqual(['from C']);
    expect(details.output.endsWith('from C')).toBe(true);
  });

  it('follows a run of A live from B, then resumes it on B after A is killed', async () => {
    const [a, b] = servers;
    const controller = new AbortController();
    const res = await call(a, `/api/v1/agents/${agentId}/stream`, { message: '/delay 250\n' + Array.from({ length: 30 }, (_, i) => `t${i}`).join(' ') }, {}, controller.signal);
    const fromA = await readSse(res, { stopAfter: (ev) => ev.length === 2, controller });
    const run = await runningRun(b);

    // Live on B while A still runs it: events arrive through NOTIFY.
    const liveController = new AbortController();
    const live = await readSse(await call(b, `/api/v1/runs/${run.id}/events`, undefined, { 'last-event-id': '2' }, liveController.signal), {
      stopAfter: (ev) => ev.length === 2,
      controller: liveController,
    });
    expect(live.map((e) => Number(e.id))).toEqual([3, 4]);

    await a.stop('SIGKILL');
    const rest = await readSse(await call(b, `/api/v1/runs/${run.id}/events`, undefined, { 'last-event-id': '4' }));
    expect(Number(rest[0].id)).toBe(5);
    expect(rest.at(-1)).toMatchObject({ event: 'error', data: { code: 'interrupted' } });
    const all = [...fromA, ...live, ...rest];
    expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
    const details = (await (await call(b, `/api/v1/runs/${run.id}`)).json()) as { status: string; output: string };
    expect(details.status).toBe('failed');
    expect(details.output).toBe(all.filter((e) => e.event === 'token').map((e) => e.data.text).join(''));
  });
});
