import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { RateLimiter } from '../../src/tenancy/limits.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { readSse } from '../helpers/sse.js';
import { ASSERTION_TYPE, FORM, expectOAuthError, form, tokenRequest } from '../identity/helpers.js';

let t: TestApp;

beforeAll(async () => {
  // Ten cents per token, so budgets are reached in a few runs of builtin/echo.
  t = await startApp({
    MODEL_PRICES: JSON.stringify({ 'builtin/echo': { input: 100_000, output: 100_000 } }),
    TOKEN_RATE_LIMIT_PER_MINUTE: '5',
  });
  await t.listen();
});
afterAll(() => t.close());

describe('request limits', () => {
  it('limits a key per minute with 429, Retry-After and RateLimit headers', async () => {
    const { key } = await t.tenant();
    const limited = await t.request('POST', '/api/v1/api-keys', { key, body: { name: 'slow', permissions: ['agents:read'] } });
    const set = await t.request('PATCH', `/api/v1/api-keys/${limited.body.apiKey.id}`, { key, body: { rateLimitPerMinute: 3 } });
    expect(set.body.rateLimitPerMinute).toBe(3);
    const statuses: number[] = [];
    let last: Awaited<ReturnType<TestApp['request']>> | undefined;
    for (let i = 0; i < 4; i++) {
      last = await t.request('GET', '/api/v1/agents', { key: limited.body.key });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expectProblem(last!, 429, 'rate_limited');
    expect(Number(last!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(last!.headers['ratelimit-limit']).toBe('3');
    expect(last!.headers['ratelimit-remaining']).toBe('0');
    // Other keys of the tenant are not affected.
    expect((await t.request('GET', '/api/v1/agents', { key })).headers['ratelimit-limit']).toBe('6000');
    expectProblem(
      await t.request('PATCH', `/api/v1/api-keys/${limited.body.apiKey.id}`, { key, body: { rateLimitPerMinute: 0 } }),
      400,
      'validation_failed',
    );
  });

  it('applies the tenant limit to keys without their own', async () => {
    const { key } = await t.tenant();
    const res = await t.request('PUT', '/api/v1/limits', { key, body: { rateLimitPerMinute: 2 } });
    expect(res.body).toMatchObject({ rateLimitPerMinute: 2, maxConcurrentRuns: null, monthlyBudgetUsd: null });
    const other = await t.request('POST', '/api/v1/api-keys', { key, body: { name: 'k', permissions: ['agents:read'] } });
    expect((await t.request('GET', '/api/v1/agents', { key: other.body.key })).status).toBe(200);
    expect((await t.request('GET', '/api/v1/agents', { key: other.body.key })).status).toBe(200);
    expectProblem(await t.request('GET', '/api/v1/agents', { key: other.body.key }), 429, 'rate_limited');
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
    const made = await t.request('POST', '/api/v1/api-keys', { key: owner, body: { name: 'limited', permissions: ['agents:read'] } });
    expect(made.status).toBe(201);
    if (perMinute !== null)
      expect(
        (await t.request('PATCH', `/api/v1/api-keys/${made.body.apiKey.id}`, { key: owner, body: { rateLimitPerMinute: perMinute } }))
          .status,
      ).toBe(200);
    return { id: made.body.apiKey.id as string, key: made.body.key as string };
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
    let last: Awaited<ReturnType<TestApp['request']>> | undefined;
    for (let i = 0; i < 4; i++) {
      last = await t.request('GET', '/api/v1/agents', { key: token });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expectProblem(last!, 429, 'rate_limited');
    expect(last!.headers['ratelimit-limit']).toBe('3');
    expect(Number(last!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('shares one budget between the key and its tokens, and follows the tenant’s limit', async () => {
    const { key } = await t.tenant();
    const k = await limitedKey(key, 4);
    const token = await accessToken(k);
    const statuses = [];
    for (const credential of [k.key, token, k.key, token, k.key, token])
      statuses.push((await t.request('GET', '/api/v1/agents', { key: credential })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    // A key without a limit of its own: its tokens follow the tenant's limit, in the key's count.
    const free = await limitedKey(key, null);
    expect((await t.request('PUT', '/api/v1/limits', { key, body: { rateLimitPerMinute: 2 } })).status).toBe(200);
    const freeToken = await accessToken(free);
    expect((await t.request('GET', '/api/v1/agents', { key: free.key })).status).toBe(200);
    const second = await t.request('GET', '/api/v1/agents', { key: freeToken });
    expect(second.status).toBe(200);
    expect(second.headers['ratelimit-limit']).toBe('2');
    expectProblem(await t.request('GET', '/api/v1/agents', { key: freeToken }), 429, 'rate_limited');
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
    expect((await t.request('GET', '/api/v1/agents', { key: k.key })).status).toBe(200);
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
    const made = await t.request('POST', '/api/v1/api-keys', { key, body: { name: 'cc', permissions: ['agents:read'] } });
    const keyId = made.body.apiKey.id as string;
    const basic = (secret: string) => ({ authorization: `Basic ${Buffer.from(`${keyId}:${secret}`).toString('base64')}` });
    const wrong = `${made.body.key.slice(0, -4)}${made.body.key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const grant = { grant_type: 'client_credentials' };

    // Spread over addresses, the failures pass the key's failure limit...
    for (let i = 0; i < limit + 2; i++)
      expectOAuthError(await tokenFrom(`198.51.100.${i + 1}`, grant, basic(wrong)), 401, 'invalid_client');
    // ...after which an address that failed for this key is refused at once, and a fresh one gets one failure.
    expectOAuthError(await tokenFrom('198.51.100.1', grant, basic(wrong)), 429, 'slow_down');
    expectOAuthError(await tokenFrom('198.51.100.200', grant, basic(wrong)), 401, 'invalid_client');
    expectOAuthError(await tokenFrom('198.51.100.200', grant, basic(wrong)), 429, 'slow_down');
    // The holder, who has not failed, is not affected, on any address.
    expect((await tokenFrom('127.0.0.1', grant, basic(made.body.key))).status).toBe(200);
    expect((await tokenFrom('192.0.2.10', grant, basic(made.body.key))).status).toBe(200);
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
    const made = await proxied.request('POST', '/api/v1/api-keys', { key, body: { name: 'cc', permissions: ['agents:read'] } });
    const keyId = made.body.apiKey.id as string;
    const basic = (secret: string) => `Basic ${Buffer.from(`${keyId}:${secret}`).toString('base64')}`;
    const wrong = `${made.body.key.slice(0, -4)}${made.body.key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
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
    expect(await via('10.0.0.1', '192.0.2.44', made.body.key)).toBe(200);
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
    await t.request('PUT', '/api/v1/limits', { key, body: { maxConcurrentRuns: 1 } });
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    const stream = readSse(await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { body: { message: '/delay 100\na b c d' } }));
    await new Promise((r) => setTimeout(r, 80));
    const res = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: 'me too' } });
    expectProblem(res, 429, 'concurrency_limit');
    expect(res.headers['retry-after']).toBe('1');
    await stream;
    expect((await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: 'now' } })).status).toBe(200);
  });
});

describe('budgets', () => {
  it('refuses runs once the tenant’s month-to-date spend reaches its budget (402)', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    await t.request('PUT', '/api/v1/limits', { key, body: { monthlyBudgetUsd: 0.5 } });
    const first = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: 'a b' } });
    expect(first.body.cost).toBeCloseTo(0.4, 9);
    const second = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: 'c d' } });
    expect(second.status).toBe(200);
    const run = await t.request('GET', `/api/v1/runs/${second.body.runId}`, { key });
    expect(run.body.budget.tenant.monthlyBudgetUsd).toBe(0.5);
    expect(run.body.budget.tenant.spentUsd).toBeCloseTo(0.4, 9);
    const third = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: 'e f' } });
    expectProblem(third, 402, 'budget_exceeded');
    const limits = await t.request('GET', '/api/v1/limits', { key });
    expect(limits.body.usage.spentUsd).toBeCloseTo(0.8, 9);
    expect(limits.body.usage.month).toBe(new Date().toISOString().slice(0, 7));
    // Raising the budget lets runs start again.
    await t.request('PUT', '/api/v1/limits', { key, body: { monthlyBudgetUsd: 10 } });
    expect((await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: 'ok' } })).status).toBe(200);
  });

  it('holds an agent to its own budget', async () => {
    const { key } = await t.tenant();
    const a = await t.agent(key, { name: 'a', appId: 'x' });
    const b = await t.agent(key, { name: 'b', appId: 'x' });
    const set = await t.request('PUT', `/api/v1/agents/${a.id}/budget`, { key, body: { monthlyBudgetUsd: 0.1 } });
    expect(set.body).toMatchObject({ agentId: a.id, monthlyBudgetUsd: 0.1, spentUsd: 0 });
    expect((await t.request('POST', `/api/v1/agents/${a.id}/execute`, { key, body: { message: 'x' } })).status).toBe(200);
    expectProblem(await t.request('POST', `/api/v1/agents/${a.id}/execute`, { key, body: { message: 'y' } }), 402, 'budget_exceeded');
    expectProblem(await t.request('POST', `/api/v1/agents/${a.id}/stream`, { key, body: { message: 'y' } }), 402, 'budget_exceeded');
    expect((await t.request('POST', `/api/v1/agents/${b.id}/execute`, { key, body: { message: 'y' } })).status).toBe(200);
    expect((await t.request('GET', `/api/v1/agents/${a.id}/budget`, { key })).body.spentUsd).toBeCloseTo(0.2, 9);
    expectProblem(
      await t.request('PUT', `/api/v1/agents/${a.id}/budget`, { key, body: { monthlyBudgetUsd: -1 } }),
      400,
      'validation_failed',
    );
  });

  it('needs settings permissions and stays in the tenant', async () => {
    const { key } = await t.tenant();
    const { key: otherKey } = await t.tenant();
    const a = await t.agent(key, { name: 'a', appId: 'x' });
    const reader = await t.key(key, ['agents:read', 'agents:write']);
    expectProblem(await t.request('GET', '/api/v1/limits', { key: reader }), 403, 'forbidden');
    expectProblem(await t.request('PUT', '/api/v1/limits', { key: reader, body: { maxConcurrentRuns: 5 } }), 403, 'forbidden');
    expectProblem(
      await t.request('PUT', `/api/v1/agents/${a.id}/budget`, { key: otherKey, body: { monthlyBudgetUsd: 1 } }),
      404,
      'not_found',
    );
    expectProblem(await t.request('PUT', '/api/v1/limits', { key, body: { maxConcurrentRuns: 0 } }), 400, 'validation_failed');
    const audit = await t.request('GET', '/api/v1/audit-events?action=tenant.limits_updated', { key });
    expect(audit.body.total).toBe(0);
  });
});
