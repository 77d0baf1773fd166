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

  const call = (
    s: ServerProcess,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
    method?: string,
  ) =>
    fetch(`${s.url}${path}`, {
      method: method ?? (body === undefined ? 'GET' : 'POST'),
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });

  async function runningRun(s: ServerProcess) {
    for (let i = 0; i < 100; i++) {
      const runs = (await (await call(s, `/api/v1/agents/${agentId}/runs?limit=1`)).json()) as {
        runs: { id: string; status: string; conversationId: string }[];
      };
      if (runs.runs[0]?.status === 'running') return runs.runs[0];
      await new Promise((r) => setTimeout(r, 30));
    }
    throw new Error('no running run');
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = { ...database.env, RUN_LEASE_SECONDS: '2', LOG_LEVEL: 'warn', TASK_POLL_MS: '200' };
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

  it('fires 100 scheduled tasks exactly once across the three replicas', async () => {
    const [a, b, c] = servers;
    // Ticking often, so the minute boundary is seen by all three within the same second.
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await call([a, b, c][i % 3], '/api/v1/tasks', {
        name: `cron-${i}`,
        description: `fire ${i}`,
        agentId,
        type: 'scheduled',
        schedule: '* * * * *',
      });
      expect(res.status).toBe(201);
      ids.push(((await res.json()) as { id: string }).id);
    }
    type Fire = { scheduledFor: string | null; decision: string; source: string };
    const firesOf = async (id: string) =>
      ((await (await call(servers[ids.indexOf(id) % 3], `/api/v1/tasks/${id}/fires?limit=100`)).json()) as { fires: Fire[] }).fires.filter(
        (f) => f.source === 'schedule' && f.decision === 'fired',
      );
    // Wait for the first minute boundary after creation (at most ~70 s).
    let fired: Fire[][] = [];
    for (let i = 0; i < 90; i++) {
      fired = await Promise.all(ids.map(firesOf));
      if (fired.every((f) => f.length >= 1)) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    expect(fired.every((f) => f.length >= 1)).toBe(true);
    // Each task fired each cron time once: no scheduledFor appears twice for a task.
    for (const f of fired) expect(new Set(f.map((x) => x.scheduledFor)).size).toBe(f.length);
    const firstMinute = fired.map((f) => f.at(-1)!.scheduledFor).sort()[0];
    // And exactly one run per task for that minute, whichever replica dispatched it.
    const runsPerTask = await Promise.all(
      ids.map(async (id) => ((await (await call(a, `/api/v1/tasks/${id}/runs`)).json()) as { runs: unknown[] }).runs.length),
    );
    const fireCount = fired.reduce((n, f) => n + f.filter((x) => x.scheduledFor === firstMinute).length, 0);
    expect(fireCount).toBe(100);
    expect(runsPerTask.every((n, i) => n === fired[i].length)).toBe(true);
    for (const id of ids) await call(a, `/api/v1/tasks/${id}`, undefined, {}, undefined, 'DELETE');
  }, 150_000);

  it('follows a run of A live from B, then resumes it on B after A is killed', async () => {
    const [a, b] = servers;
    const controller = new AbortController();
    const res = await call(
      a,
      `/api/v1/agents/${agentId}/stream`,
      { message: '/delay 250\n' + Array.from({ length: 30 }, (_, i) => `t${i}`).join(' ') },
      {},
      controller.signal,
    );
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
    expect(details.output).toBe(
      all
        .filter((e) => e.event === 'token')
        .map((e) => e.data.text)
        .join(''),
    );
  });
});
