import { Agentry, AgentryError } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SVID_DEFAULT_TTL_S } from '../../src/identity/svid.js';
import { createTestDatabase, dialect, startApp, type TestApp, type TestDatabase } from '../helpers/app.js';
import { cli, startServer, type ServerProcess } from '../helpers/process.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { createTask, replica, type Replica } from '../tasks/helpers.js';

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

  /**
   * The SDK on the server, with no retries (the outage's 503s are what is checked). `failed` reads the
   * answer behind a failed call: an AgentryError carries its status and code, not its headers or whole body.
   */
  const sdk = (apiKey: string) => {
    const answers: Response[] = [];
    const client = new Agentry({
      baseUrl: server.url,
      apiKey,
      maxRetries: 0,
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        answers.push(res.clone());
        return res;
      },
    });
    const failed = async (call: Promise<unknown>) => {
      const error = await call.then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(AgentryError);
      return answers.at(-1)!;
    };
    return { client, failed };
  };

  it('answers 503 with a clear problem while the database is away, and recovers when it returns', async () => {
    const { apiKey } = JSON.parse((await cli(['tenants', 'create', 'outage', '--json'], database.env)).stdout);
    const { client, failed } = sdk(apiKey);
    const get = () => client.api.GET('/api/v1/agents');
    expect((await get()).response.status).toBe(200);
    const agent = await client.agents.create({ name: 'Outage', appId: 'outage' });
    // The generated types require ttlSeconds (a field with a default): it is sent with the default.
    const { svid } = await client.identity.svid(agent.id, { audience: server.url, ttlSeconds: SVID_DEFAULT_TTL_S });
    const exchange = () =>
      client.identity.token({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: svid,
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        audience: agent.id,
        scope: 'tools:search',
      });
    await exchange();

    await proxy.down();
    for (const res of [await failed(get()), await failed(client.health.ready())]) {
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const body = (await res.json()) as { code: string; detail: string };
      expect(body.code).toBe('database_unavailable');
      expect(JSON.stringify(body)).not.toMatch(/at \w+ \(|ECONN/);
    }
    // The OAuth endpoints answer in RFC 6749's form, and an outage is not a server error there either.
    const token = await failed(exchange());
    expect(token.status).toBe(503);
    expect(token.headers.get('retry-after')).toBe('5');
    expect(await token.json()).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringMatching(/database/) });
    expect(server.child.exitCode).toBeNull();
    expect((await client.api.GET('/healthz')).response.status).toBe(200);

    await proxy.up();
    await expect
      .poll(
        () =>
          get().then(
            ({ response }) => response.status,
            (err: AgentryError) => err.status,
          ),
        { timeout: 10_000, interval: 200 },
      )
      .toBe(200);
    expect((await client.api.GET('/readyz')).response.status).toBe(200);
  });

  it('a run ending while the database is away is recorded when it returns: not left running until its lease expires', async () => {
    const { apiKey } = JSON.parse((await cli(['tenants', 'create', 'outage-run', '--json'], database.env)).stdout);
    const { client } = sdk(apiKey);
    const agent = await client.agents.create({ name: 'Ends late', appId: 'outage' });
    // Two words, 1.5 s apart: the database goes away after the first (its start and first token are written).
    // Its body read as it comes (parseAs: 'stream'), so the outage starts between its events.
    const { response } = await client.api.POST('/api/v1/agents/{id}/stream', {
      params: { path: { id: agent.id } },
      body: { message: '/delay 1500\none two' },
      headers: { accept: 'text/event-stream' },
      parseAs: 'stream',
    });
    expect(response.status).toBe(200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!/event: token/.test(text)) text += (await reader.read()).value ?? '';
    const logged = server.output().length;
    await proxy.down();
    // The run's end meets the outage (the server says so), then the database comes back.
    await vi.waitFor(() => expect(server.output().slice(logged)).toMatch(/the end of a run/), { timeout: 20_000, interval: 50 });
    await proxy.up();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    const events = [...text.matchAll(/event: (\w+)\ndata: (.*)/g)].map((m) => ({ event: m[1], data: JSON.parse(m[2]) }));
    expect(events.map((e) => e.event)).toEqual(['token', 'token', 'done']);
    const { runId, conversationId } = events[2].data as { runId: string; conversationId: string };
    const run = await client.runs.get(runId);
    expect(run).toMatchObject({ status: 'completed', output: 'one two' });
    // Its conversation is free again at once (not busy until the lease expires).
    const next = await client.api.POST('/api/v1/conversations/{id}/messages', {
      params: { path: { id: conversationId } },
      body: { content: 'and again' },
    });
    expect(next.response.status).toBe(200);
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
    const back = await vi.waitFor(
      async () => {
        await Promise.all([t.services.tasks.executor.sweep(), cut.services.tasks.executor.sweep()]);
        const [row] = await jobs();
        expect(row.state, 'the job to be queued again').toBe('queued');
        return row;
      },
      { timeout: 10_000, interval: 20 },
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
    const taskPath = { params: { path: { id: task.id } } };
    const done = (await t.api(key).GET('/api/v1/tasks/{id}', taskPath)).data;
    expect(done).toMatchObject({ status: 'completed', runCount: 1, lastError: null });
    expect(await jobs()).toMatchObject([{ state: 'done', attempts: 1 }]);
    expect((await t.api(key).GET('/api/v1/tasks/{id}/runs', taskPath)).data!.total).toBe(1);
  });
});
