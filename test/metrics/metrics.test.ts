import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/clock.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { endedRun, pendingOf, shoutWaits } from '../approvals/helpers.js';
import { exchange, svidFor } from '../identity/helpers.js';
import { labelSets, sample } from './helpers.js';

/**
 * GET /metrics: the Prometheus text format behind METRICS_TOKEN on the main port (404 without one), or
 * on METRICS_PORT without a token; bounded labels (route templates, no ids; a tenant label only when
 * asked). The counters are checked after real traffic over HTTP.
 */

const TOKEN = 'metrics-token-0123456789';

describe('GET /metrics on the main port', () => {
  let t: TestApp;
  let key: string;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;

  beforeAll(async () => {
    t = await startApp({ METRICS_TOKEN: TOKEN, MODEL_PRICES: JSON.stringify({ 'builtin/echo': { input: 1_000_000, output: 2_000_000 } }) });
    ({ key } = await t.tenant('metrics'));
    mcp = await startMcpServer();
  });
  afterAll(async () => {
    await t?.close();
    await mcp?.close();
  });

  // /metrics is not an operation of the OpenAPI document: it is read raw throughout.
  const scrape = async () => {
    const res = await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text;
  };

  it('answers 401 without the token, with a wrong one, and with an API key', async () => {
    const missing = await t.raw('GET', '/metrics');
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer');
    expect(missing.body).toMatchObject({ code: 'missing_credentials' });
    const wrong = await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ code: 'invalid_credentials' });
    const apiKey = await t.raw('GET', '/metrics', { key });
    expect(apiKey.status).toBe(401);
  });

  it('counts requests by route template, method and status class, never by id', async () => {
    const a = await t.agent(key, { name: 'one' });
    const b = await t.agent(key, { name: 'two' });
    const get = (id: string) => t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id } } });
    for (const id of [a.id, b.id]) expect((await get(id)).response.status).toBe(200);
    expect((await get('019a0000-0000-7000-8000-000000000000')).response.status).toBe(404);
    // A route no document has.
    expect((await t.raw('GET', '/no/such/path', { key })).status).toBe(404);

    const text = await scrape();
    expect(sample(text, 'agentry_http_requests_total', { route: '/api/v1/agents/:id', method: 'GET', status_class: '2xx' })).toBe(2);
    expect(sample(text, 'agentry_http_requests_total', { route: '/api/v1/agents/:id', method: 'GET', status_class: '4xx' })).toBe(1);
    expect(sample(text, 'agentry_http_requests_total', { route: '(unmatched)', method: 'GET', status_class: '4xx' })).toBe(1);
    expect(
      sample(text, 'agentry_http_request_duration_seconds_count', { route: '/api/v1/agents/:id', method: 'GET', status_class: '2xx' }),
    ).toBe(2);
    // Buckets are cumulative, up to +Inf, which is the count.
    const agentGets = { route: '/api/v1/agents/:id', method: 'GET', status_class: '2xx' };
    expect(sample(text, 'agentry_http_request_duration_seconds_bucket', { ...agentGets, le: '+Inf' })).toBe(2);
    expect(sample(text, 'agentry_http_request_duration_seconds_bucket', { ...agentGets, le: '60' })).toBe(2);
    expect(sample(text, 'agentry_http_request_duration_seconds_sum', agentGets)).toBeGreaterThan(0);
    expect(text).toContain('# TYPE agentry_http_request_duration_seconds histogram');
    // No id anywhere, and no tenant label unless METRICS_TENANT_LABEL=true.
    expect(text).not.toContain(a.id);
    expect(text).not.toContain('tenant=');
    // prom-client's process metrics are in this app's registry.
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    if (dialect === 'sqlite') expect(sample(text, 'agentry_sqlite_wal_bytes')).toBeGreaterThanOrEqual(0);
    else expect(sample(text, 'agentry_db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
  });

  it('counts runs, model tokens and cost, tool calls by source, and failures', async () => {
    const helper = await t.agent(key, { name: 'helper' });
    const agent = await t.agent(key, {
      name: 'lead',
      tools: [
        { type: 'mcp', url: mcp.url },
        { type: 'agent', agentId: helper.id, name: 'ask_helper' },
      ],
    });
    const before = await scrape();
    const count = (text: string, name: string, labels: Record<string, string>) => sample(text, name, labels) ?? 0;

    const ok = await execute(t, key, agent.id, { message: '/tool add {"a":1,"b":2}\n/tool ask_helper {"message":"hi"}\n/tool nope {}' });
    expect(ok.response.status, JSON.stringify(ok.error)).toBe(200);
    const failed = await execute(t, key, agent.id, { message: '/fail boom' });
    expect(failed.response.status).toBeGreaterThanOrEqual(400);

    const after = await scrape();
    const moved = (name: string, labels: Record<string, string>) => count(after, name, labels) - count(before, name, labels);
    expect(moved('agentry_runs_started_total', { kind: 'execute' })).toBe(2);
    expect(moved('agentry_runs_started_total', { kind: 'delegation' })).toBe(1);
    expect(moved('agentry_runs_ended_total', { kind: 'execute', status: 'completed' })).toBe(1);
    expect(moved('agentry_runs_ended_total', { kind: 'execute', status: 'failed' })).toBe(1);
    expect(moved('agentry_run_duration_seconds_count', { kind: 'execute', status: 'completed' })).toBe(1);
    // The completed run: two model steps; the failed one: one.
    expect(moved('agentry_model_steps_total', { provider: 'builtin', model: 'echo' })).toBe(2 + 1 + 1);
    const run = ok.data!;
    expect(moved('agentry_model_tokens_total', { provider: 'builtin', model: 'echo', direction: 'output' })).toBeGreaterThanOrEqual(
      run.tokenUsage.outputTokens,
    );
    expect(moved('agentry_model_cost_usd_total', { provider: 'builtin', model: 'echo' })).toBeGreaterThanOrEqual(run.cost);
    // Tenants name MCP and delegation tools: those names never become labels; an unknown tool is the model's invention.
    expect(moved('agentry_tool_calls_total', { source: 'mcp', name: 'other', outcome: 'ok' })).toBe(1);
    expect(moved('agentry_tool_calls_total', { source: 'delegation', name: 'other', outcome: 'ok' })).toBe(1);
    expect(moved('agentry_tool_calls_total', { source: 'unknown', name: 'other', outcome: 'error' })).toBe(1);
    expect(moved('agentry_tool_call_duration_seconds_count', { source: 'mcp', name: 'other' })).toBe(1);
    expect(labelSets(after, 'agentry_tool_calls_total').map((l) => l.name)).not.toContain('add');
    expect(moved('agentry_run_events_published_total', { event: 'tool_call_start' })).toBe(3);
    expect(count(after, 'agentry_runs_active', {})).toBe(0);
  });

  it('counts a run paused for an approval once: started once, ended once', async () => {
    const agent = await t.agent(key, { name: 'careful', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });
    const before = await scrape();
    const { data: paused } = await execute(t, key, agent.id, { message: '/tool shout {"text":"hi"}' });
    expect(paused!.status).toBe('awaiting_approval');
    const [approval] = await pendingOf(t, key, paused!.runId);
    const approved = await t.api(key).POST('/api/v1/approvals/{id}/approve', { params: { path: { id: approval.id } }, body: {} });
    expect(approved.response.status).toBe(200);
    expect((await endedRun(t, key, paused!.runId)).status).toBe('completed');
    // The run's end is counted just after its row is written: polled, with a deadline.
    const ended = { kind: 'execute', status: 'completed' };
    const after = await vi.waitFor(
      async () => {
        const text = await scrape();
        expect(sample(text, 'agentry_runs_ended_total', ended) ?? 0, 'the resumed run’s end was never counted').not.toBe(
          sample(before, 'agentry_runs_ended_total', ended) ?? 0,
        );
        return text;
      },
      { timeout: 10_000, interval: 20 },
    );
    const moved = (name: string, labels: Record<string, string>) =>
      (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    expect(moved('agentry_runs_started_total', { kind: 'execute' })).toBe(1);
    expect(moved('agentry_runs_ended_total', ended)).toBe(1);
    expect(moved('agentry_tool_calls_total', { source: 'mcp', name: 'other', outcome: 'ok' })).toBe(1);
  });

  it('observes the time to the first token of a streamed run', async () => {
    const agent = await t.agent(key, { name: 'streamer' });
    const base = await t.listen();
    const res = await fetch(`${base}/api/v1/agents/${agent.id}/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hello there' }),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('event: done');
    const text = await scrape();
    expect(sample(text, 'agentry_run_time_to_first_token_seconds_count', { kind: 'stream' })).toBe(1);
  });
});

describe('identity and cron metrics', () => {
  let t: TestApp;
  const clock = new ManualClock('2030-01-01T00:00:30.000Z');
  beforeAll(async () => {
    // No background loops: cron ticks are driven here, on a clock that is set.
    t = await startApp({ METRICS_TOKEN: TOKEN, TASK_WORKERS: '0', TASK_SCHEDULER: 'off' }, { clock });
  });
  afterAll(() => t?.close());
  const scrape = async () => (await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })).text;

  it('counts tokens issued by kind and authorize decisions by reason', async () => {
    const { key } = await t.tenant();
    const caller = await t.agent(key, { name: 'caller' });
    const callee = await t.agent(key, { name: 'callee' });
    const { svid } = await svidFor(t, key, caller.id);
    const { access_token } = await exchange(t, svid, callee.id, 'tools:*');
    const authorize = (token: string) => t.api().POST('/api/v1/identity/authorize', { body: { token, tool: 'search', callee: callee.id } });
    expect((await authorize(access_token)).data).toMatchObject({ allowed: true, reason: 'no_policy_audit_allow' });
    expect((await authorize('garbage')).data).toMatchObject({ allowed: false, reason: 'token_invalid' });

    const text = await scrape();
    expect(sample(text, 'agentry_identity_tokens_issued_total', { type: 'svid' })).toBe(1);
    expect(sample(text, 'agentry_identity_tokens_issued_total', { type: 'exchange' })).toBe(1);
    expect(sample(text, 'agentry_identity_authorize_decisions_total', { decision: 'allow', reason: 'no_policy_audit_allow' })).toBe(1);
    expect(sample(text, 'agentry_identity_authorize_decisions_total', { decision: 'deny', reason: 'token_invalid' })).toBe(1);
  });

  it('counts cron fires and misfires by policy, and shows the queue', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key);
    const make = async (name: string, misfirePolicy: 'skip' | 'fire_once') => {
      const { error, response } = await t.api(key).POST('/api/v1/tasks', {
        body: { name, description: name, agentId: agent.id, type: 'scheduled', schedule: '* * * * *', misfirePolicy },
      });
      expect(response.status, JSON.stringify(error)).toBe(201);
    };
    await make('skipping', 'skip');
    await make('once', 'fire_once');
    // One minute on: each fires on time.
    clock.set('2030-01-01T00:01:00.000Z');
    expect(await t.services.tasks.cron.tick()).toBe(2);
    // Five minutes later, past the 60 s grace: skip records the missed times; fire_once fires once for them.
    clock.set('2030-01-01T00:06:30.000Z');
    expect(await t.services.tasks.cron.tick()).toBe(2);

    const text = await scrape();
    // 00:02 to 00:05 are past the grace (4 misfired); 00:06, 30 s ago, still fires.
    expect(sample(text, 'agentry_task_fires_total', { policy: 'skip', outcome: 'fired' })).toBe(2);
    expect(sample(text, 'agentry_task_fires_total', { policy: 'skip', outcome: 'misfired' })).toBe(4);
    expect(sample(text, 'agentry_task_fires_total', { policy: 'fire_once', outcome: 'fired' })).toBe(2);
    expect(sample(text, 'agentry_task_fires_total', { policy: 'fire_once', outcome: 'misfired' })).toBe(4);
    // No workers here: the jobs wait, the oldest since 00:01 (5.5 minutes before the clock).
    const queued = await t.db.kysely
      .selectFrom('task_jobs')
      .select('available_at')
      .where('state', '=', 'queued')
      .orderBy('available_at')
      .execute();
    expect(queued.length).toBeGreaterThan(0);
    expect(sample(text, 'agentry_task_jobs', { state: 'queued' })).toBe(queued.length);
    expect(sample(text, 'agentry_task_jobs', { state: 'running' })).toBe(0);
    expect(sample(text, 'agentry_task_queue_lag_seconds')).toBe((clock.now() - Date.parse(queued[0].available_at)) / 1000);
  });
});

describe('GET /metrics without METRICS_TOKEN', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startApp()));
  afterAll(() => t?.close());

  it('answers 404, whatever the credential', async () => {
    const { key } = await t.tenant();
    const headerSets: Record<string, string>[] = [{}, { authorization: `Bearer ${key}` }, { authorization: `Bearer ${TOKEN}` }];
    for (const headers of headerSets) {
      const res = await t.raw('GET', '/metrics', { headers });
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
    expect(t.services.metrics).toBeUndefined();
  });
});

describe('METRICS_PORT', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startApp({ METRICS_PORT: '0', METRICS_TENANT_LABEL: 'true' })));
  afterAll(() => t?.close());

  it('serves /metrics on its own loopback port without a token; the main port answers 404', async () => {
    const address = t.app.metricsAddress();
    expect(address?.address).toBe('127.0.0.1');
    const { id: tenantId, key } = await t.tenant();
    const agent = await t.agent(key);
    expect((await execute(t, key, agent.id, { message: 'hi' })).response.status).toBe(200);

    const res = await fetch(`http://127.0.0.1:${address!.port}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    // METRICS_TENANT_LABEL=true: run metrics carry the tenant.
    expect(sample(text, 'agentry_runs_started_total', { kind: 'execute', tenant: tenantId })).toBe(1);
    expect(sample(text, 'agentry_runs_ended_total', { kind: 'execute', status: 'completed', tenant: tenantId })).toBe(1);
    expect((await fetch(`http://127.0.0.1:${address!.port}/other`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${address!.port}/metrics`, { method: 'POST' })).status).toBe(404);
    expect((await t.raw('GET', '/metrics')).status).toBe(404);
  });
});

describe('rejections', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startApp({ METRICS_TOKEN: TOKEN, RATE_LIMIT_PER_MINUTE: '2', TOKEN_RATE_LIMIT_PER_MINUTE: '1' })));
  afterAll(() => t?.close());

  it('counts requests refused by the rate limit', async () => {
    const { key } = await t.tenant();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await t.api(key).GET('/api/v1/agents')).response.status);
    expect(statuses).toEqual([200, 200, 429]);
    const res = await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(sample(res.text, 'agentry_rejections_total', { reason: 'rate_limited' })).toBe(1);
  });

  it('counts token requests refused by the token endpoint’s limit', async () => {
    const token = () =>
      t.api().POST('/api/v1/identity/oauth/token', {
        body: { grant_type: 'client_credentials', client_id: 'someone', client_secret: 'wrong' },
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    expect((await token()).response.status).not.toBe(429);
    const refused = await token();
    expect(refused.response.status).toBe(429);
    expect(refused.error).toMatchObject({ error: 'slow_down' });
    const res = await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(sample(res.text, 'agentry_rejections_total', { reason: 'token_rate_limited' })).toBe(1);
  });

  it('exposes the rows the retention sweep reports', async () => {
    t.services.metrics!.retentionDeleted('run_events', 120);
    t.services.metrics!.retentionDeleted('runs', 0);
    const res = await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(sample(res.text, 'agentry_retention_deleted_rows_total', { table: 'run_events' })).toBe(120);
    expect(sample(res.text, 'agentry_retention_deleted_rows_total', { table: 'runs' })).toBeUndefined();
  });
});

describe('configuration', () => {
  it('refuses a short METRICS_TOKEN and a METRICS_PORT that is not a port', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be at least 16 characters/);
    expect(() => loadConfig({ METRICS_PORT: 'x' })).toThrow(/METRICS_PORT must be a whole number/);
    expect(loadConfig({}).metrics).toMatchObject({ token: undefined, port: undefined, host: '127.0.0.1', tenantLabel: false });
  });
});
