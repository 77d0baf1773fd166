import { Agentry } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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

  /** The SDK on one replica; no retries, so each call is one request to that replica. */
  const on = (s: ServerProcess) => new Agentry({ baseUrl: s.url, apiKey: key, maxRetries: 0 }).api;
  const SSE = { accept: 'text/event-stream' };

  /** Streams a new run of the agent on `s`; its events read as they come (parseAs: 'stream'). */
  const stream = async (s: ServerProcess, message: string, signal?: AbortSignal) =>
    (
      await on(s).POST('/api/v1/agents/{id}/stream', {
        params: { path: { id: agentId } },
        body: { message },
        headers: SSE,
        parseAs: 'stream',
        signal,
      })
    ).response;
  /** The run's events after `lastEventId`, from `s`. */
  const eventsAfter = async (s: ServerProcess, runId: string, lastEventId: string, signal?: AbortSignal) =>
    (
      await on(s).GET('/api/v1/runs/{runId}/events', {
        params: { path: { runId } },
        headers: { ...SSE, 'last-event-id': lastEventId },
        parseAs: 'stream',
        signal,
      })
    ).response;

  /** The agent's latest run, once `s` answers it running. */
  const runningRun = (s: ServerProcess) =>
    vi.waitFor(
      async () => {
        const { data } = await on(s).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId }, query: { limit: 1 } } });
        const [run] = data!.runs;
        expect(run?.status, 'a running run').toBe('running');
        return run;
      },
      { timeout: 10_000, interval: 30 },
    );

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = { ...database.env, RUN_LEASE_SECONDS: '2', LOG_LEVEL: 'warn', TASK_POLL_MS: '200' };
    servers = await Promise.all([startServer(env), startServer(env), startServer(env)]);
    key = JSON.parse((await cli(['tenants', 'create', 'replicas', '--json'], env)).stdout).apiKey;
    agentId = (await on(servers[0]).POST('/api/v1/agents', { body: { name: 'r', appId: 'x' } })).data!.id;
  });
  afterAll(async () => {
    for (const s of servers) await s.stop('SIGKILL');
    await database?.drop();
  });

  it('streams on A, cancels through B at once', async () => {
    const [a, b] = servers;
    const events = readSse(await stream(a, '/delay 300\n' + 'word '.repeat(40)));
    const run = await runningRun(b);
    const started = Date.now();
    const cancelled = (await on(b).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId: run.id } } })).data!;
    expect(cancelled.status).toBe('cancelled');
    // Through NOTIFY, not the lease-renewal fallback (which would take ~700 ms or more).
    expect(Date.now() - started).toBeLessThan(1500);
    const streamed = await events;
    expect(streamed.at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled' } });
  });

  it('injects through C into a run on A', async () => {
    const [a, , c] = servers;
    const events = readSse(await stream(a, '/delay 150\none two three four five six'));
    const run = await runningRun(c);
    const inj = await on(c).POST('/api/v1/conversations/{id}/inject', {
      params: { path: { id: run.conversationId! } },
      body: { content: 'from C' },
    });
    expect(inj.response.status).toBe(202);
    const streamed = await events;
    expect(streamed.at(-1)!.event).toBe('done');
    const details = (await on(c).GET('/api/v1/runs/{runId}', { params: { path: { runId: run.id } } })).data!;
    expect(details.steps!.flatMap((s) => s.injected)).toEqual(['from C']);
    expect(details.output.endsWith('from C')).toBe(true);
  });

  it('fires 100 scheduled tasks exactly once across the three replicas', async () => {
    const [a, b, c] = servers;
    // Ticking often, so the minute boundary is seen by all three within the same second.
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await on([a, b, c][i % 3]).POST('/api/v1/tasks', {
        body: { name: `cron-${i}`, description: `fire ${i}`, agentId, type: 'scheduled', schedule: '* * * * *' },
      });
      expect(res.response.status).toBe(201);
      ids.push(res.data!.id);
    }
    const firesOf = async (id: string) =>
      (
        await on(servers[ids.indexOf(id) % 3]).GET('/api/v1/tasks/{id}/fires', { params: { path: { id }, query: { limit: 100 } } })
      ).data!.fires.filter((f) => f.source === 'schedule' && f.decision === 'fired');
    // Wait for the first minute boundary after creation (at most ~70 s).
    const fired = await vi.waitFor(
      async () => {
        const all = await Promise.all(ids.map(firesOf));
        expect(all.every((f) => f.length >= 1)).toBe(true);
        return all;
      },
      { timeout: 90_000, interval: 1_000 },
    );
    // Each task fired each cron time once: no scheduledFor appears twice for a task.
    for (const f of fired) expect(new Set(f.map((x) => x.scheduledFor)).size).toBe(f.length);
    // And exactly one fire per task for its first cron time, whichever replica dispatched it. Each task's
    // own: creating the 100 on a loaded machine can straddle a minute, and those after it first fire a
    // minute later.
    const runsPerTask = await Promise.all(
      ids.map(async (id) => (await on(a).GET('/api/v1/tasks/{id}/runs', { params: { path: { id } } })).data!.runs.length),
    );
    const fireCount = fired.reduce((n, f) => n + f.filter((x) => x.scheduledFor === f.at(-1)!.scheduledFor).length, 0);
    expect(fireCount).toBe(100);
    expect(runsPerTask.every((n, i) => n === fired[i].length)).toBe(true);
    for (const id of ids) await on(a).DELETE('/api/v1/tasks/{id}', { params: { path: { id } } });
  }, 150_000);

  it('follows a run of A live from B, then resumes it on B after A is killed', async () => {
    const [a, b] = servers;
    const controller = new AbortController();
    const res = await stream(a, '/delay 250\n' + Array.from({ length: 30 }, (_, i) => `t${i}`).join(' '), controller.signal);
    const fromA = await readSse(res, { stopAfter: (ev) => ev.length === 2, controller });
    const run = await runningRun(b);

    // Live on B while A still runs it: events arrive through NOTIFY.
    const liveController = new AbortController();
    const live = await readSse(await eventsAfter(b, run.id, '2', liveController.signal), {
      stopAfter: (ev) => ev.length === 2,
      controller: liveController,
    });
    expect(live.map((e) => Number(e.id))).toEqual([3, 4]);

    await a.stop('SIGKILL');
    const rest = await readSse(await eventsAfter(b, run.id, '4'));
    expect(Number(rest[0].id)).toBe(5);
    expect(rest.at(-1)).toMatchObject({ event: 'error', data: { code: 'interrupted' } });
    const all = [...fromA, ...live, ...rest];
    expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
    const details = (await on(b).GET('/api/v1/runs/{runId}', { params: { path: { runId: run.id } } })).data!;
    expect(details.status).toBe('failed');
    expect(details.output).toBe(
      all
        .filter((e) => e.event === 'token')
        .map((e) => e.data.text)
        .join(''),
    );
  });
});
