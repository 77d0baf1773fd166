import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialect, type TestDatabase } from '../helpers/app.js';
import { cli, startServer, type ServerProcess } from '../helpers/process.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

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
    const agent = (await (await fetch(`${server.url}/api/v1/agents`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'Outage', appId: 'outage' }) })).json()) as { id: string };
    const svidRes = await fetch(`${server.url}/api/v1/identity/agents/${agent.id}/svid`, { method: 'POST', headers: auth, body: JSON.stringify({ audience: server.url }) });
    const { svid } = (await svidRes.json()) as { svid: string };
    const exchange = () =>
      fetch(`${server.url}/api/v1/identity/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: svid, subject_token_type: 'urn:ietf:params:oauth:token-type:jwt', audience: agent.id, scope: 'tools:search' }),
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
    const agent = (await (await fetch(`${server.url}/api/v1/agents`, { method: 'POST', headers, body: JSON.stringify({ name: 'Ends late', appId: 'outage' }) })).json()) as { id: string };
    // Two words, 1.5 s apart: the database goes away after the first (its start and first token are written).
    const res = await fetch(`${server.url}/api/v1/agents/${agent.id}/stream`, { method: 'POST', headers, body: JSON.stringify({ message: '/delay 1500\none two' }) });
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
    const next = await fetch(`${server.url}/api/v1/conversations/${conversationId}/messages`, { method: 'POST', headers, body: JSON.stringify({ content: 'and again' }) });
    expect(next.status).toBe(200);
  });
});
