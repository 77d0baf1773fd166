import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { RateLimiter } from '../../src/tenancy/limits.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { readSse } from '../helpers/sse.js';
import { ASSERTION_TYPE, FORM, expectOAuthError, form, tokenRequest } from '../identity/helpers.js';

let t: TestApp;

beforeAll(async () => {
  // Ten cents per token, so budgets are reached in a few runs of builtin/echo.
  t = await startApp({
    MODEL_PRICES: JSON.stringify({ 'builtin/echo': { input: 100_000, output: 100_000 } }),
    TOKEN_RATE_LIMIT_PER_MINUTE: '5',
  });
});
afterAll(() => t.close());

const listAgents = (key: string) => t.api(key).GET('/api/v1/agents');
type ListAgents = Awaited<ReturnType<typeof listAgents>>;

/** A new key of the tenant of `owner` holding agents:read. */
async function readKey(on: TestApp, owner: string, name: string) {
  const { data, error, response } = await on.api(owner).POST('/api/v1/api-keys', { body: { name, permissions: ['agents:read'] } });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!;
}

const setKeyLimit = (owner: string, id: string, rateLimitPerMinute: number | null) =>
  t.api(owner).PATCH('/api/v1/api-keys/{id}', { params: { path: { id } }, body: { rateLimitPerMinute } });

describe('request limits', () => {
  it('limits a key per minute with 429, Retry-After and RateLimit headers', async () => {
    const { key } = await t.tenant();
    const limited = await readKey(t, key, 'slow');
    const set = await setKeyLimit(key, limited.apiKey.id, 3);
    expect(set.data!.rateLimitPerMinute).toBe(3);
    const statuses: number[] = [];
    let last: ListAgents | undefined;
    for (let i = 0; i < 4; i++) {
      last = await listAgents(limited.key);
      statuses.push(last.response.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expectProblem(last!, 429, 'rate_limited');
    expect(Number(last!.response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(last!.response.headers.get('ratelimit-limit')).toBe('3');
    expect(last!.response.headers.get('ratelimit-remaining')).toBe('0');
    // Other keys of the tenant are not affected.
    expect((await listAgents(key)).response.headers.get('ratelimit-limit')).toBe('6000');
    expectProblem(await setKeyLimit(key, limited.apiKey.id, 0), 400, 'validation_failed');
  });

  it('applies the tenant limit to keys without their own', async () => {
    const { key } = await t.tenant();
    const res = await t.api(key).PUT('/api/v1/limits', { body: { rateLimitPerMinute: 2 } });
    expect(res.data).toMatchObject({ rateLimitPerMinute: 2, maxConcurrentRuns: null, monthlyBudgetUsd: null });
    const other = await readKey(t, key, 'k');
    expect((await listAgents(other.key)).response.status).toBe(200);
    expect((await listAgents(other.key)).response.status).toBe(200);
    expectProblem(await listAgents(other.key), 429, 'rate_limited');
  });

  it('slides: the previous minute counts in proportion to its overlap', () => {
    const limiter = new RateLimiter();
    const t0 = 1_800_000_000_000 - (1_800_000_000_000 % 60_000);
    for (let i = 0; i < 10; i++) expect(limiter.take('k', 10, t0 + 1000).allowed).toBe(true);
    expect(limiter.take('k', 10, t0 + 2000).allowed).toBe(false);
    // Half-way through the next minute, half of the previous 10 still count: 5 more fit.
    const results = Array.from({ length: 6 }, () => limiter.take('k', 10, t0 + 90_000).allowed);
    expect(results).toEqual([true, true, true, true, true, false]);
  });
});

describe('request limits through access tokens', () => {
  const basic = (id: string, key: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${key}`).toString('base64')}` });

  async function limitedKey(owner: string, perMinute: number | null) {
    const made = await readKey(t, owner, 'limited');
    if (perMinute !== null) expect((await setKeyLimit(owner, made.apiKey.id, perMinute)).response.status).toBe(200);
    return { id: made.apiKey.id, key: made.key };
  }

  async function accessToken(k: { id: string; key: string }) {
    const res = await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, k.key));
    expect(res.status, res.text).toBe(200);
    return res.body.access_token as string;
  }

  it('counts calls made with a token minted from a key against that key’s limit', async () => {
    const { key } = await t.tenant();
    const k = await limitedKey(key, 3);
    const token = await accessToken(k);
    const statuses: number[] = [];
    let last: ListAgents | undefined;
    for (let i = 0; i < 4; i++) {
      last = await listAgents(token);
      statuses.push(last.response.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expectProblem(last!, 429, 'rate_limited');
    expect(last!.response.headers.get('ratelimit-limit')).toBe('3');
    expect(Number(last!.response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('shares one budget between the key and its tokens, and follows the tenant’s limit', async () => {
    const { key } = await t.tenant();
    const k = await limitedKey(key, 4);
    const token = await accessToken(k);
    const statuses = [];
    for (const credential of [k.key, token, k.key, token, k.key, token]) statuses.push((await listAgents(credential)).response.status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    // A key without a limit of its own: its tokens follow the tenant's limit, in the key's count.
    const free = await limitedKey(key, null);
    expect((await t.api(key).PUT('/api/v1/limits', { body: { rateLimitPerMinute: 2 } })).response.status).toBe(200);
    const freeToken = await accessToken(free);
    expect((await listAgents(free.key)).response.status).toBe(200);
    const second = await listAgents(freeToken);
    expect(second.response.status).toBe(200);
    expect(second.response.headers.get('ratelimit-limit')).toBe('2');
    expectProblem(await listAgents(freeToken), 429, 'rate_limited');
  });

  it('limits the token endpoint per client', async () => {
    const { key } = await t.tenant();
    const k = await limitedKey(key, null);
    const other = await limitedKey(key, null);
    const limit = 5;
    const burst = await Promise.all(
      Array.from({ length: limit + 5 }, () => tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, k.key))),
    );
    expect(burst.filter((r) => r.status === 200)).toHaveLength(limit);
    const refused = burst.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(5);
    for (const r of refused) {
      expectOAuthError(r, 429, 'slow_down');
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    // Another client is not affected, nor are the key's API calls.
    expect((await tokenRequest(t, { grant_type: 'client_credentials' }, basic(other.id, other.key))).status).toBe(200);
    expect((await listAgents(k.key)).response.status).toBe(200);
  });
});

describe('token endpoint lockout', () => {
  const limit = 5;
  /** A token request from `address` (the peer's address the server sees). */
  async function tokenFrom(address: string, params: Record<string, string>, headers: Record<string, string> = {}) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/identity/oauth/token',
      remoteAddress: address,
      headers: { ...FORM, ...headers },
      payload: form(params),
    });
    return { status: res.statusCode, headers: res.headers, body: res.json(), text: res.body };
  }
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');

  it('forged requests naming an agent do not stop the agent; the forging address is throttled', async () => {
    const { key, id: tenantId } = await t.tenant();
    const agent = await t.agent(key);
    // The client id an agent's assertions name (public: its client metadata document's URL).
    const clientId = `${t.config.publicBaseUrl}/api/v1/identity/agents/${agent.id}/client-metadata.json`;
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: clientId, sub: clientId, aud: 'x', iat: now, exp: now + 60, jti: 'j' };
    const forged = `${b64({ alg: 'ES256', typ: 'JWT' })}.${b64(claims)}.${'A'.repeat(86)}`;
    const assertion = (value: string) => ({
      grant_type: 'client_credentials',
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: value,
    });

    const flood = [];
    for (let i = 0; i < limit * 3; i++) flood.push((await tokenFrom('203.0.113.7', assertion(forged))).status);
    expect(flood.slice(0, limit).every((s) => s === 401)).toBe(true);
    expect(flood.slice(limit)).toEqual(Array(limit * 2).fill(429));

    // The agent, signing with its own key, still gets its tokens: its whole count is its own.
    for (let i = 0; i < limit; i++) {
      const real = await tokenFrom('127.0.0.1', assertion(await t.services.identity.signClientAssertion(tenantId, agent.id)));
      expect(real.status, real.text).toBe(200);
    }
    // Past its own count it is limited as before.
    const over = await tokenFrom('127.0.0.1', assertion(await t.services.identity.signClientAssertion(tenantId, agent.id)));
    expectOAuthError(over, 429, 'slow_down');
    // The forging address stays throttled.
    expectOAuthError(await tokenFrom('203.0.113.7', assertion(forged)), 429, 'slow_down');
  });

  it('failures naming an API key from many addresses lock out each failing address, never the key’s holder', async () => {
    const { key } = await t.tenant();
    const made = await readKey(t, key, 'cc');
    const keyId = made.apiKey.id;
    const basic = (secret: string) => ({ authorization: `Basic ${Buffer.from(`${keyId}:${secret}`).toString('base64')}` });
    const wrong = `${made.key.slice(0, -4)}${made.key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const grant = { grant_type: 'client_credentials' };

    // Spread over addresses, the failures pass the key's failure limit...
    for (let i = 0; i < limit + 2; i++)
      expectOAuthError(await tokenFrom(`198.51.100.${i + 1}`, grant, basic(wrong)), 401, 'invalid_client');
    // ...after which an address that failed for this key is refused at once, and a fresh one gets one failure.
    expectOAuthError(await tokenFrom('198.51.100.1', grant, basic(wrong)), 429, 'slow_down');
    expectOAuthError(await tokenFrom('198.51.100.200', grant, basic(wrong)), 401, 'invalid_client');
    expectOAuthError(await tokenFrom('198.51.100.200', grant, basic(wrong)), 429, 'slow_down');
    // The holder, who has not failed, is not affected, on any address.
    expect((await tokenFrom('127.0.0.1', grant, basic(made.key))).status).toBe(200);
    expect((await tokenFrom('192.0.2.10', grant, basic(made.key))).status).toBe(200);
  });
});

describe('token endpoint lockout behind a reverse proxy (TRUST_PROXY)', () => {
  let proxied: TestApp;
  beforeAll(async () => {
    proxied = await startApp({ TOKEN_RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: '10.0.0.1' });
  });
  afterAll(() => proxied?.close());

  it('TRUST_PROXY takes a hop count or addresses and CIDRs, never true', () => {
    const trustProxy = (value: string) => loadConfig({ DATA_DIR: proxied.config.dataDir, DATABASE_URL: '', TRUST_PROXY: value }).trustProxy;
    expect(trustProxy('')).toBe(false);
    expect(trustProxy('2')).toBe(2);
    expect(trustProxy('10.0.0.0/8, ::1')).toEqual(['10.0.0.0/8', '::1']);
    for (const bad of ['true', 'proxy.local', '10.0.0.0/33', '10.0.0.1/8/1']) expect(() => trustProxy(bad), bad).toThrow(/TRUST_PROXY/);
  });

  it('counts failures per forwarded address from a trusted proxy, and believes no one else’s X-Forwarded-For', async () => {
    const { key } = await proxied.tenant();
    const made = await readKey(proxied, key, 'cc');
    const keyId = made.apiKey.id;
    const basic = (secret: string) => `Basic ${Buffer.from(`${keyId}:${secret}`).toString('base64')}`;
    const wrong = `${made.key.slice(0, -4)}${made.key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const via = async (peer: string, forwardedFor: string, secret: string) =>
      (
        await proxied.app.inject({
          method: 'POST',
          url: '/api/v1/identity/oauth/token',
          remoteAddress: peer,
          headers: { ...FORM, authorization: basic(secret), 'x-forwarded-for': forwardedFor },
          payload: form({ grant_type: 'client_credentials' }),
        })
      ).statusCode;

    const forger = [];
    for (let i = 0; i < 5; i++) forger.push(await via('10.0.0.1', '203.0.113.9', wrong));
    expect(forger).toEqual([401, 401, 401, 429, 429]);
    // The holder behind the same proxy, at another address, is not locked out.
    expect(await via('10.0.0.1', '192.0.2.44', made.key)).toBe(200);
    // A peer that is not the trusted proxy is counted by its own address whatever it forwards: with the
    // key's failures over the limit, that address gets one failure, then no more (a believed header
    // would have made each request a fresh address, each answered 401).
    const untrusted = [];
    for (let i = 0; i < 4; i++) untrusted.push(await via('10.0.0.2', `198.51.100.${i}`, wrong));
    expect(untrusted).toEqual([401, 429, 429, 429]);
  });
});

describe('concurrent runs', () => {
  it('refuses a run over the tenant’s maximum with 429 concurrency_limit', async () => {
    const { key } = await t.tenant();
    const api = t.api(key);
    await api.PUT('/api/v1/limits', { body: { maxConcurrentRuns: 1 } });
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    const stream = api
      .POST('/api/v1/agents/{id}/stream', {
        params: { path: { id: agent.id } },
        body: { message: '/delay 100\na b c d' },
        parseAs: 'stream',
      })
      .then(({ response }) => readSse(response));
    // The streamed run holds the one place once it is counted as running.
    await vi.waitFor(async () => expect((await api.GET('/api/v1/limits')).data!.usage.runningRuns).toBe(1), {
      timeout: 5000,
      interval: 10,
    });
    const res = await execute(api, agent.id, { message: 'me too' });
    expectProblem(res, 429, 'concurrency_limit');
    expect(res.response.headers.get('retry-after')).toBe('1');
    await stream;
    expect((await execute(api, agent.id, { message: 'now' })).response.status).toBe(200);
  });
});

describe('budgets', () => {
  it('refuses runs once the tenant’s month-to-date spend reaches its budget (402)', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    const api = t.api(key);
    await api.PUT('/api/v1/limits', { body: { monthlyBudgetUsd: 0.5 } });
    const first = await execute(api, agent.id, { message: 'a b' });
    expect(first.run!.cost).toBeCloseTo(0.4, 9);
    const second = await execute(api, agent.id, { message: 'c d' });
    expect(second.response.status).toBe(200);
    const run = await api.GET('/api/v1/runs/{runId}', { params: { path: { runId: second.run!.runId } } });
    expect(run.data!.budget.tenant!.monthlyBudgetUsd).toBe(0.5);
    expect(run.data!.budget.tenant!.spentUsd).toBeCloseTo(0.4, 9);
    const third = await execute(api, agent.id, { message: 'e f' });
    expectProblem(third, 402, 'budget_exceeded');
    const limits = await api.GET('/api/v1/limits');
    expect(limits.data!.usage.spentUsd).toBeCloseTo(0.8, 9);
    expect(limits.data!.usage.month).toBe(new Date().toISOString().slice(0, 7));
    // Raising the budget lets runs start again.
    await api.PUT('/api/v1/limits', { body: { monthlyBudgetUsd: 10 } });
    expect((await execute(api, agent.id, { message: 'ok' })).response.status).toBe(200);
  });

  it('holds an agent to its own budget', async () => {
    const { key } = await t.tenant();
    const a = await t.agent(key, { name: 'a', appId: 'x' });
    const b = await t.agent(key, { name: 'b', appId: 'x' });
    const api = t.api(key);
    const budgetOf = { params: { path: { id: a.id } } };
    const set = await api.PUT('/api/v1/agents/{id}/budget', { ...budgetOf, body: { monthlyBudgetUsd: 0.1 } });
    expect(set.data).toMatchObject({ agentId: a.id, monthlyBudgetUsd: 0.1, spentUsd: 0 });
    expect((await execute(api, a.id, { message: 'x' })).response.status).toBe(200);
    expectProblem(await execute(api, a.id, { message: 'y' }), 402, 'budget_exceeded');
    expectProblem(
      await api.POST('/api/v1/agents/{id}/stream', { params: { path: { id: a.id } }, body: { message: 'y' }, parseAs: 'text' }),
      402,
      'budget_exceeded',
    );
    expect((await execute(api, b.id, { message: 'y' })).response.status).toBe(200);
    expect((await api.GET('/api/v1/agents/{id}/budget', budgetOf)).data!.spentUsd).toBeCloseTo(0.2, 9);
    expectProblem(await api.PUT('/api/v1/agents/{id}/budget', { ...budgetOf, body: { monthlyBudgetUsd: -1 } }), 400, 'validation_failed');
  });

  it('needs settings permissions and stays in the tenant', async () => {
    const { key } = await t.tenant();
    const { key: otherKey } = await t.tenant();
    const a = await t.agent(key, { name: 'a', appId: 'x' });
    const reader = await t.key(key, ['agents:read', 'agents:write']);
    expectProblem(await t.api(reader).GET('/api/v1/limits'), 403, 'forbidden');
    expectProblem(await t.api(reader).PUT('/api/v1/limits', { body: { maxConcurrentRuns: 5 } }), 403, 'forbidden');
    expectProblem(
      await t.api(otherKey).PUT('/api/v1/agents/{id}/budget', { params: { path: { id: a.id } }, body: { monthlyBudgetUsd: 1 } }),
      404,
      'not_found',
    );
    expectProblem(await t.api(key).PUT('/api/v1/limits', { body: { maxConcurrentRuns: 0 } }), 400, 'validation_failed');
    const audit = await t.api(key).GET('/api/v1/audit-events', { params: { query: { action: 'tenant.limits_updated' } } });
    expect(audit.data!.total).toBe(0);
  });
});
