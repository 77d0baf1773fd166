import net from 'node:net';
import { Agentry, AgentryError, type RunEvent } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

// The SDK's resource groups beyond agents and conversations, and its transport's edges (openapi-fetch
// with middleware), over a real socket against the app.
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

describe('resource groups', () => {
  it('approvals: list, get, approve and reject the calls a run waits on', async () => {
    const agent = await echo('Careful', {
      tools: [{ type: 'builtin', name: 'skills' }],
      configuration: { approval: { rules: [{ tool: 'skill_discover', reason: 'look first' }] } },
    });
    for (const decision of ['approve', 'reject'] as const) {
      const run = client.agents.stream(agent.id, { message: '/tool skill_discover {"query":"orders"}' });
      const events: RunEvent[] = [];
      for await (const event of run) {
        events.push(event);
        if (event.type !== 'approval_required') continue;
        const { approvalId } = event.data;
        const pending = await client.approvals.list({ status: 'pending', agentId: agent.id }).toArray();
        expect(pending.map((a) => a.id)).toEqual([approvalId]);
        expect(await client.approvals.get(approvalId)).toMatchObject({
          id: approvalId,
          kind: 'tool_call',
          status: 'pending',
          agentId: agent.id,
        });
        const decided =
          decision === 'approve'
            ? await client.approvals.approve(approvalId)
            : await client.approvals.reject(approvalId, { reason: 'not now' });
        expect(decided).toMatchObject({ id: approvalId, status: decision === 'approve' ? 'approved' : 'rejected' });
      }
      expect(events.at(-1)?.type).toBe('done');
      // An approved call runs its tool; a rejected one answers the model the reason instead.
      const ended = events.find((e) => e.type === 'tool_call_end');
      const result = ended?.type === 'tool_call_end' ? ended.data.result : undefined;
      if (decision === 'approve') expect(result).toMatchObject({ skills: [] });
      else expect(result).toEqual({ error: { code: 'rejected', message: 'not now' } });
    }
    expect(await client.approvals.list({ status: 'pending', agentId: agent.id }).toArray()).toEqual([]);
  });

  it('runs.list lists the tenant’s runs with their filters', async () => {
    const agent = await echo('Listed');
    const first = await client.agents.execute(agent.id, { message: 'one' });
    const second = await client.agents.execute(agent.id, { message: 'two' });
    const runs = await client.runs.list({ agentId: agent.id, limit: 1 }).toArray();
    expect(runs.map((r) => r.id)).toEqual([second.runId, first.runId]);
    expect(runs[0]).toMatchObject({ agentId: agent.id, status: 'completed' });
  });

  it('tasks: run answers the run it started; its runs and fires; a signed webhook trigger', async () => {
    const agent = await echo('Tasked');
    const task = await client.tasks.create({
      name: 'Yearly',
      description: 'say hi',
      agentId: agent.id,
      type: 'scheduled',
      schedule: '0 0 1 1 *',
    });
    const started = await client.tasks.run(task.id, { input: { note: 'now' } });
    // Typed as the run (it was typed as nothing): its fields without a cast.
    const runId: string | null = started.runId;
    expect(started).toMatchObject({ runId: expect.any(String), taskId: task.id, conversationId: expect.any(String) });
    expect((await client.tasks.taskRun(runId!)).id).toBe(runId);
    expect((await client.tasks.runs(task.id).toArray()).map((r) => r.id)).toContain(runId);

    const hooked = (await client.tasks.create({
      name: 'On order',
      description: 'a new order',
      agentId: agent.id,
      type: 'triggered',
      trigger: { type: 'webhook' },
    })) as unknown as { id: string; trigger: { secret: string } };
    const fired = await client.tasks.trigger(hooked.id, { orderId: 42 }, hooked.trigger.secret);
    expect(fired).toMatchObject({ accepted: true, taskId: hooked.id, duplicate: false });
    expect((await client.tasks.fires(hooked.id).toArray()).map((f) => f.id)).toEqual([fired.fireId]);
    const forged = await client.tasks.trigger(hooked.id, { orderId: 43 }, 'whsec_not-the-secret').catch((e) => e);
    expect(forged).toBeInstanceOf(AgentryError);
    expect(forged).toMatchObject({ status: 401 });
    expect(await client.tasks.pendingApproval().toArray()).toEqual([]);
  });

  it('memory per user, agent budget, duplicate, apps and models', async () => {
    const agent = await echo('Budgeted');
    await client.agents.memory.set(agent.id, 'prefs', { value: 'tea' }, { userId: 'u-1' });
    expect((await client.agents.memory.list(agent.id, { userId: 'u-1' })).blocks.map((b) => b.value)).toContain('tea');
    expect(await client.agents.setBudget(agent.id, { monthlyBudgetUsd: 12.5 })).toMatchObject({ monthlyBudgetUsd: 12.5 });
    expect(await client.agents.budget(agent.id)).toMatchObject({ monthlyBudgetUsd: 12.5, spentUsd: 0 });
    const copy = await client.agents.duplicate(agent.id, { name: 'Budgeted (copy)' });
    expect(copy).toMatchObject({ name: 'Budgeted (copy)', appId: 'sdk-resources' });
    expect(copy.id).not.toBe(agent.id);
    expect((await client.apps.list()).apps).toContainEqual({ id: 'sdk-resources', agentCount: expect.any(Number) });
    expect((await client.models.list()).models.length).toBeGreaterThan(0);
  });

  it('conversations: stats, and inject refused when nothing is running', async () => {
    const agent = await echo('Talker');
    const { conversationId } = await client.agents.execute(agent.id, { message: 'hello' });
    expect((await client.conversations.stats()).total).toBeGreaterThanOrEqual(1);
    const idle = await client.conversations.inject(conversationId, { content: 'and also' }).catch((e) => e);
    expect(idle).toBeInstanceOf(AgentryError);
    expect(idle.status).toBe(409);
  });

  it('code: the tenant’s limits within the server’s maxima, a limit above them refused by its field', async () => {
    const settings = await client.code.settings();
    expect(settings.limits).toEqual(settings.maxima);
    const lower = await client.code.setSettings({ wallMs: 1_000, maxOutputFiles: 0 });
    expect(lower.limits).toMatchObject({ wallMs: 1_000, maxOutputFiles: 0, cpuMs: settings.maxima.cpuMs });
    const above = await client.code.setSettings({ cpuMs: settings.maxima.cpuMs + 1 }).catch((err) => err);
    expect(above).toBeInstanceOf(AgentryError);
    expect(above).toMatchObject({ status: 400 });
    expect((above as AgentryError).message).toMatch(/cpuMs/);
    expect((await client.code.setSettings({ wallMs: null, maxOutputFiles: null })).limits).toEqual(settings.maxima);
  });

  it('skills: update, categories, import, export, assignments', async () => {
    const agent = await echo('Skilled');
    const skill = await client.skills.create({
      name: 'sdk-brief',
      description: 'be brief',
      instructions: 'Be brief.',
      category: 'writing',
    });
    expect(await client.skills.update(skill.id, { description: 'be very brief' })).toMatchObject({ description: 'be very brief' });
    expect((await client.skills.categories()).categories).toContain('writing');
    await client.skills.assign(skill.id, { agentId: agent.id });
    expect((await client.skills.forAgent(agent.id)).skills.map((s) => s.id)).toEqual([skill.id]);
    expect(JSON.stringify(await client.skills.agents(skill.id))).toContain(agent.id);
    await client.skills.unassign(skill.id, agent.id);
    expect((await client.skills.forAgent(agent.id)).skills).toEqual([]);
    const markdown = await (await client.skills.export(skill.id)).text();
    expect(markdown).toContain('Be brief.');
    const imported = await client.skills.import(markdown.replace('name: sdk-brief', 'name: sdk-brief-2'));
    expect(imported).toMatchObject({ name: 'sdk-brief-2' });
    const store = await client.skills.store();
    expect(store.skills.length).toBe(store.total);
  });

  it('identity: public keys without a credential, TBAC mode, agent keys', async () => {
    const agent = await echo('Known');
    const sent: (string | null)[] = [];
    const spying = new Agentry({
      baseUrl: base,
      apiKey: key,
      fetch: (input, init) => {
        sent.push(new Headers(init?.headers).get('authorization'));
        return fetch(input, init);
      },
    });
    expect((await spying.identity.jwks()).keys).toEqual(expect.any(Array));
    expect((await spying.identity.agentJwks(agent.id)).keys.length).toBeGreaterThan(0);
    expect(await spying.identity.clientMetadata(agent.id)).toMatchObject({ client_id: expect.any(String) });
    expect(sent).toEqual([null, null, null]);
    await spying.identity.mode();
    expect(sent.at(-1)).toBe(`Bearer ${key}`);

    expect(await client.identity.setMode({ mode: 'enforce' })).toEqual({ mode: 'enforce' });
    expect(await client.identity.mode()).toEqual({ mode: 'enforce' });
    await client.identity.setMode({ mode: 'audit' });
    const rotated = await client.identity.rotateKey(agent.id);
    const keys = (await client.identity.keys(agent.id)).keys;
    const old = keys.find((k) => k.kid !== (rotated as { kid?: string }).kid);
    expect(old).toBeDefined();
    await client.identity.revokeKey(agent.id, old!.kid);
  });

  it('tenant, limits, retention, usage, audit, API keys, connectors and health', async () => {
    expect(await client.tenant.get()).toMatchObject({ tenant: { id: expect.any(String) }, credential: { type: 'api_key' } });
    expect(await client.tenant.setLimits({ maxConcurrentRuns: 7 })).toMatchObject({ maxConcurrentRuns: 7 });
    expect(await client.tenant.limits()).toMatchObject({ maxConcurrentRuns: 7 });
    expect(await client.tenant.setRetention({ runsDays: 30 })).toMatchObject({ runsDays: 30 });
    expect(await client.tenant.retention()).toMatchObject({ runsDays: 30 });
    expect((await client.usage.daily()).rows).toEqual(expect.any(Array));
    const made = await client.apiKeys.create({ name: 'listed', permissions: ['agents:read'] });
    expect((await client.audit.list({ resourceId: made.apiKey.id }).toArray()).length).toBeGreaterThan(0);
    expect((await client.apiKeys.list().toArray()).map((k) => k.id)).toContain(made.apiKey.id);
    const connectors = (await client.connectors.list()).connectors;
    expect(connectors.length).toBeGreaterThan(0);
    expect(await client.connectors.get(connectors[0].id)).toMatchObject({ id: connectors[0].id });
    expect(await client.connectors.requests().toArray()).toEqual([]);
    expect(await client.health.live()).toEqual({ status: 'ok' });
    expect(await client.health.ready()).toMatchObject({ status: 'ready' });
  });
});

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
