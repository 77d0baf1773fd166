import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialect, startApp, type TestApp, type TestDatabase } from '../helpers/app.js';
import { cli, startServer, type ServerProcess } from '../helpers/process.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { createTask, replica, waitFor, type Replica } from '../tasks/helpers.js';

describe.skipIf(dialect !== 'postgres')('a database outage', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;

  beforeAll(async () => {
    database = await createTestDatabase();
    const direct = new URL(database.env.DATABASE_URL!);
    proxy = await startTcpProxy(direct.hostname, Number(direct.port || 5432));
    const viaProxy = new URL(direct);
    viaProxy.port = String(proxy.port);
    server = await startServer({ ...database.env, DATABASE_URL: viaProxy.toString(), LOG_LEVEL: 'warn' });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await proxy?.close();
    await database?.drop();
  });

  it('answers 503 with a clear problem while the database is away, and recovers when it returns', async () => {
    const { apiKey } = JSON.parse((await cli(['tenants', 'create', 'outage', '--json'], database.env)).stdout);
    const auth = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const get = () => fetch(`${server.url}/api/v1/agents`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect((await get()).status).toBe(200);
    const agent = (await (
      await fetch(`${server.url}/api/v1/agents`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ name: 'Outage', appId: 'outage' }),
      })
    ).json()) as { id: string };
    const svidRes = await fetch(`${server.url}/api/v1/identity/agents/${agent.id}/svid`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ audience: server.url }),
    });
    const { svid } = (await svidRes.json()) as { svid: string };
    const exchange = () =>
      fetch(`${server.url}/api/v1/identity/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
          subject_token: svid,
          subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
          audience: agent.id,
          scope: 'tools:search',
        }),
      });
    const before = await exchange();
    expect(before.status, await before.clone().text()).toBe(200);

    await proxy.down();
    for (const res of [await get(), await fetch(`${server.url}/readyz`)]) {
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const body = (await res.json()) as { code: string; detail: string };
      expect(body.code).toBe('database_unavailable');
      expect(JSON.stringify(body)).not.toMatch(/at \w+ \(|ECONN/);
    }
    // The OAuth endpoints answer in RFC 6749's form, and an outage is not a server error there either.
    const token = await exchange();
    expect(token.status).toBe(503);
    expect(token.headers.get('retry-after')).toBe('5');
    expect(await token.json()).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringMatching(/database/) });
    expect(server.child.exitCode).toBeNull();
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    await proxy.up();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await get()).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });

  it('a run ending while the database is away is recorded when it returns: not left running until its lease expires', async () => {
    const { apiKey } = JSON.parse((await cli(['tenants', 'create', 'outage-run', '--json'], database.env)).stdout);
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const agent = (await (
      await fetch(`${server.url}/api/v1/agents`, { method: 'POST', headers, body: JSON.stringify({ name: 'Ends late', appId: 'outage' }) })
    ).json()) as { id: string };
    // Two words, 1.5 s apart: the database goes away after the first (its start and first token are written).
    const res = await fetch(`${server.url}/api/v1/agents/${agent.id}/stream`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ message: '/delay 1500\none two' }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!/event: token/.test(text)) text += (await reader.read()).value ?? '';
    const logged = server.output().length;
    await proxy.down();
    // The run's end meets the outage (the server says so), then the database comes back.
    while (!/the end of a run/.test(server.output().slice(logged))) await new Promise((r) => setTimeout(r, 50));
    await proxy.up();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    const events = [...text.matchAll(/event: (\w+)\ndata: (.*)/g)].map((m) => ({ event: m[1], data: JSON.parse(m[2]) }));
    expect(events.map((e) => e.event)).toEqual(['token', 'token', 'done']);
    const { runId, conversationId } = events[2].data as { runId: string; conversationId: string };
    const run = (await (await fetch(`${server.url}/api/v1/runs/${runId}`, { headers })).json()) as { status: string; output: string };
    expect(run).toMatchObject({ status: 'completed', output: 'one two' });
    // Its conversation is free again at once (not busy until the lease expires).
    const next = await fetch(`${server.url}/api/v1/conversations/${conversationId}/messages`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ content: 'and again' }),
    });
    expect(next.status).toBe(200);
  });
});

describe.skipIf(dialect !== 'postgres')('a one-time task claimed during a database outage', () => {
  const env = { TASK_WORKERS: '0', TASK_SCHEDULER: 'off', RUN_LEASE_SECONDS: '2' };
  let t: TestApp;
  let cut: Replica;
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;

  beforeAll(async () => {
    t = await startApp(env);
    const direct = new URL(t.config.databaseUrl!);
    proxy = await startTcpProxy(direct.hostname, Number(direct.port || 5432));
    const viaProxy = new URL(direct);
    viaProxy.port = String(proxy.port);
    // A second replica whose database connection goes through the proxy, so it alone loses it.
    cut = await replica(t, { ...env, DATABASE_URL: viaProxy.toString() });
  });
  afterAll(async () => {
    await cut?.close();
    await proxy?.close();
    await t?.close();
  });

  it('runs once when the database is back, its only attempt not spent by the outage', async () => {
    const { key } = await t.tenant();
    const agentId = (await t.agent(key, { appId: 'outage' })).id;
    const task = await createTask(t, key, { agentId, description: 'after the outage' });
    const jobs = () => t.db.kysely.selectFrom('task_jobs').selectAll().where('task_id', '=', task.id).execute();

    const job = (await cut.services.tasks.executor.claimNext())!;
    expect(job).toMatchObject({ task_id: task.id, state: 'claimed', attempts: 1 });
    // The run's start meets the outage, and so does recording that it failed: the job stays claimed.
    await proxy.down();
    await cut.services.tasks.executor.execute(job).catch(() => undefined);
    await proxy.up();
    expect(await jobs()).toMatchObject([{ state: 'claimed', run_id: null }]);

    // Its lease expires; either replica's sweep (both at once here) puts it back, unspent.
    const back = await waitFor(
      async () => {
        await Promise.all([t.services.tasks.executor.sweep(), cut.services.tasks.executor.sweep()]);
        const [row] = await jobs();
        return row.state === 'queued' ? row : null;
      },
      10_000,
      'the job to be queued again',
    );
    expect(back).toMatchObject({ attempts: 0, lease_owner: null, run_id: null });

    // Both replicas try to claim it: exactly one gets it, and its run is the task's only one.
    const claims = (await Promise.all([t.services.tasks.executor.claimNext(), cut.services.tasks.executor.claimNext()])).filter(
      (j) => j !== null,
    );
    expect(claims).toHaveLength(1);
    expect(claims[0]).toMatchObject({ id: job.id, attempts: 1 });
    await Promise.all([t.services.tasks.executor.sweep(), cut.services.tasks.executor.sweep()]);
    const owner = claims[0]!.lease_owner === cut.services.runs.instanceId ? cut : t;
    await owner.services.tasks.executor.execute(claims[0]!);
    const done = (await t.request('GET', `/api/v1/tasks/${task.id}`, { key })).body;
    expect(done).toMatchObject({ status: 'completed', runCount: 1, lastError: null });
    expect(await jobs()).toMatchObject([{ state: 'done', attempts: 1 }]);
    expect((await t.request('GET', `/api/v1/tasks/${task.id}/runs`, { key })).body.total).toBe(1);
  });
});
