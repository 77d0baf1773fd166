import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { ManualClock } from '../../src/clock.js';
import { DECISION_CACHE_MS } from '../../src/identity/cache.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { TT_ACCESS, TT_JWT, exchange, exchangeParams, postToken, svidFor, tamper } from './helpers.js';

type AuthorizeInput = NonNullable<paths['/api/v1/identity/authorize']['post']['requestBody']>['content']['application/json'];
type PolicyInput = NonNullable<paths['/api/v1/identity/tbac/policies']['post']['requestBody']>['content']['application/json'];

let t: TestApp;
let acme: { id: string; key: string };
let globex: { id: string; key: string };
/** The app's clock: tokens, policies' conditions and the decision caches expire by moving it. */
const clock = new ManualClock();

beforeAll(async () => {
  t = await startApp({}, { clock });
  acme = await t.tenant('acme');
  globex = await t.tenant('globex');
});
afterAll(() => t.close());

const spiffe = (tenant: string, agent: string) => `spiffe://agentry.local/tenant/${tenant}/agent/${agent}`;
const authorize = (body: AuthorizeInput, headers: Record<string, string> = {}) =>
  t.api().POST('/api/v1/identity/authorize', { body, headers });
const createPolicy = (body: PolicyInput, key = acme.key) => t.api(key).POST('/api/v1/identity/tbac/policies', { body });
const policy = async (body: PolicyInput, key = acme.key) => {
  const res = await createPolicy(body, key);
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  return res.data!;
};
const policies = (
  query: NonNullable<paths['/api/v1/identity/tbac/policies']['get']['parameters']['query']>,
  key: string | null = acme.key,
) => t.api(key).GET('/api/v1/identity/tbac/policies', { params: { query } });
const updatePolicy = (
  id: string,
  body: NonNullable<paths['/api/v1/identity/tbac/policies/{id}']['patch']['requestBody']>['content']['application/json'],
  key = acme.key,
) => t.api(key).PATCH('/api/v1/identity/tbac/policies/{id}', { params: { path: { id } }, body });
const deletePolicy = (id: string, key = acme.key) => t.api(key).DELETE('/api/v1/identity/tbac/policies/{id}', { params: { path: { id } } });
const getMode = (key: string) => t.api(key).GET('/api/v1/identity/tbac/mode');
const putMode = (mode: 'audit' | 'enforce', key = acme.key) => t.api(key).PUT('/api/v1/identity/tbac/mode', { body: { mode } });
const setMode = async (mode: 'audit' | 'enforce', key = acme.key) => expect((await putMode(mode, key)).response.status).toBe(200);
const auditEvents = async (key: string, query: NonNullable<paths['/api/v1/audit-events']['get']['parameters']['query']>) =>
  (await t.api(key).GET('/api/v1/audit-events', { params: { query } })).data!.events;

/** Two fresh agents of acme and a token for caller -> callee with the given scope. */
async function pair(scope = 'tools:*') {
  const caller = await t.agent(acme.key, { name: 'caller' });
  const callee = await t.agent(acme.key, { name: 'callee' });
  const { svid } = await svidFor(t, acme.key, caller.id);
  const { access_token } = await exchange(t, svid, callee.id, scope);
  return { caller, callee, token: access_token };
}

describe('TBAC policies', () => {
  it('creates (allow by default), lists with filters and pages, updates and deletes', async () => {
    const x = await t.agent(acme.key);
    const y = await t.agent(acme.key);
    const res = await createPolicy({ callerAgentId: x.id, calleeAgentId: y.id, toolName: 'search' });
    expect(res.response.status).toBe(201);
    const first = res.data!;
    expect(first).toEqual({
      id: expect.any(String),
      callerAgentId: x.id,
      calleeAgentId: y.id,
      toolName: 'search',
      effect: 'allow',
      description: null,
      conditions: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const p2 = await policy({ callerAgentId: '*', calleeAgentId: y.id, toolName: '*', effect: 'deny', description: 'nobody calls y' });
    const p3 = await policy({ callerAgentId: x.id, calleeAgentId: '*', toolName: 'search', effect: 'deny' });

    const all = await policies({ calleeAgentId: y.id });
    expect(all.response.status).toBe(200);
    expect(all.data).toMatchObject({ total: 2, page: 1, limit: 20 });
    expect(all.data!.policies.map((p) => p.id)).toEqual([p2.id, first.id]); // newest first
    const byCaller = await policies({ callerAgentId: x.id, toolName: 'search' });
    expect(byCaller.data!.policies.map((p) => p.id).sort()).toEqual([first.id, p3.id].sort());
    const wildcard = await policies({ callerAgentId: '*', calleeAgentId: y.id });
    expect(wildcard.data!.policies.map((p) => p.id)).toEqual([p2.id]);
    const paged = await policies({ calleeAgentId: y.id, limit: 1, page: 2 });
    expect(paged.data).toMatchObject({ total: 2, page: 2, limit: 1 });
    expect(paged.data!.policies.map((p) => p.id)).toEqual([first.id]);
    expectProblem(await policies({ limit: 101 }), 400, 'validation_failed');
    expectProblem(await policies({ page: 0 }), 400, 'validation_failed');

    const patched = await updatePolicy(first.id, {
      effect: 'deny',
      description: 'no search',
      conditions: { notAfter: '2099-01-01T00:00:00Z', timeWindow: { start: '09:00', end: '17:00' } },
    });
    expect(patched.response.status).toBe(200);
    expect(patched.data).toMatchObject({
      effect: 'deny',
      description: 'no search',
      conditions: { notAfter: '2099-01-01T00:00:00.000Z', timeWindow: { start: '09:00', end: '17:00' } },
      callerAgentId: x.id,
    });
    const cleared = await updatePolicy(first.id, { conditions: null, description: null });
    expect(cleared.data).toMatchObject({ conditions: null, description: null, effect: 'deny' });

    expect((await deletePolicy(first.id)).response.status).toBe(204);
    expectProblem(await deletePolicy(first.id), 404, 'not_found');
    expectProblem(await updatePolicy(first.id, { effect: 'allow' }), 404, 'not_found');
  });

  it('refuses a second policy for the same triple with 409 policy_exists, also under concurrency', async () => {
    const x = await t.agent(acme.key);
    await policy({ callerAgentId: x.id, calleeAgentId: '*', toolName: 'a' });
    expectProblem(await createPolicy({ callerAgentId: x.id, calleeAgentId: '*', toolName: 'a', effect: 'deny' }), 409, 'policy_exists');
    const results = await Promise.all(
      Array.from({ length: 5 }, () => createPolicy({ callerAgentId: x.id, calleeAgentId: '*', toolName: 'b' })),
    );
    expect(results.map((r) => r.response.status).sort()).toEqual([201, 409, 409, 409, 409]);
    // The same triple in another tenant is another policy.
    expect((await createPolicy({ callerAgentId: '*', calleeAgentId: '*', toolName: 'a' }, globex.key)).response.status).toBe(201);
  });

  it('validates bodies: fields, agents of the tenant, conditions', async () => {
    const x = await t.agent(acme.key);
    const foreign = await t.agent(globex.key);
    /** A body the types allow that the server refuses. */
    const bad = async (body: Partial<PolicyInput>, path?: string) => {
      const res = await createPolicy({ callerAgentId: x.id, calleeAgentId: '*', toolName: 'ok', ...body });
      expectProblem(res, 400, 'validation_failed');
      if (path) expect(res.error!.errors!.map((e) => e.path)).toContain(path);
    };
    /** A body the types forbid (a missing field, an unknown value or key): sent raw. */
    const badRaw = async (body: Record<string, unknown>, path?: string) => {
      const res = await t.raw('POST', '/api/v1/identity/tbac/policies', {
        key: acme.key,
        body: { callerAgentId: x.id, calleeAgentId: '*', toolName: 'ok', ...body },
      });
      expectProblem(res, 400, 'validation_failed');
      if (path) expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    };
    await badRaw({ callerAgentId: undefined }, 'body.callerAgentId');
    await bad({ toolName: 'two words' }, 'body.toolName');
    await badRaw({ effect: 'maybe' }, 'body.effect');
    await badRaw({ extra: 1 }, 'body.extra');
    await bad({ calleeAgentId: foreign.id }, 'body.calleeAgentId'); // other tenant's agent: unknown here
    await bad({ calleeAgentId: '01a00000-0000-7000-8000-000000000000' }, 'body.calleeAgentId');
    await bad({ conditions: { notBefore: '2030-01-02T00:00:00Z', notAfter: '2030-01-01T00:00:00Z' } }, 'body.conditions.notAfter');
    await bad({ conditions: { timeWindow: { start: '10:00', end: '10:00' } } }, 'body.conditions.timeWindow.end');
    await bad({ conditions: { timeWindow: { start: '24:00', end: '10:00' } } });
    await bad({ conditions: { notAfter: 'tomorrow' } });
    await badRaw({ conditions: { weekday: 'monday' } });
  });

  it('is tenant-scoped and needs settings:read / settings:write', async () => {
    const p = await policy({ callerAgentId: '*', calleeAgentId: '*', toolName: 'scoped' });
    const list = await policies({ toolName: 'scoped' }, globex.key);
    expect(list.data!.total).toBe(0);
    expectProblem(await updatePolicy(p.id, { effect: 'deny' }, globex.key), 404, 'not_found');
    expectProblem(await deletePolicy(p.id, globex.key), 404, 'not_found');
    const reader = await t.key(acme.key, ['settings:read']);
    const agentsOnly = await t.key(acme.key, ['agents:read', 'agents:write']);
    expect((await policies({}, reader)).response.status).toBe(200);
    expectProblem(await policies({}, agentsOnly), 403, 'forbidden');
    expectProblem(await createPolicy({ callerAgentId: '*', calleeAgentId: '*', toolName: 'z' }, reader), 403, 'forbidden');
    expectProblem(await updatePolicy(p.id, {}, reader), 403, 'forbidden');
    expectProblem(await deletePolicy(p.id, reader), 403, 'forbidden');
    expectProblem(await policies({}, null), 401, 'missing_credentials');
  });

  it('audits policy changes', async () => {
    const p = await policy({ callerAgentId: '*', calleeAgentId: '*', toolName: 'audited' });
    await updatePolicy(p.id, { effect: 'deny' });
    await deletePolicy(p.id);
    const events = await auditEvents(acme.key, { resourceId: p.id });
    expect(events.map((e) => e.action)).toEqual(['tbac_policy.deleted', 'tbac_policy.updated', 'tbac_policy.created']);
  });
});

describe('TBAC mode', () => {
  it('defaults to audit, switches to enforce, keeps other settings, and needs settings permissions', async () => {
    const tenant = await t.tenant('mode-tenant');
    await t.db.kysely
      .updateTable('tenants')
      .set({ settings: JSON.stringify({ other: 1 }) })
      .where('id', '=', tenant.id)
      .execute();
    expect((await getMode(tenant.key)).data).toEqual({ mode: 'audit' });
    const put = await putMode('enforce', tenant.key);
    expect(put.response.status).toBe(200);
    expect(put.data).toEqual({ mode: 'enforce' });
    expect((await getMode(tenant.key)).data).toEqual({ mode: 'enforce' });
    const row = await t.db.kysely.selectFrom('tenants').select('settings').where('id', '=', tenant.id).executeTakeFirstOrThrow();
    expect(JSON.parse(row.settings)).toEqual({ other: 1, tbacMode: 'enforce' });
    // Other tenants are untouched.
    expect((await getMode(globex.key)).data).toEqual({ mode: 'audit' });
    // A mode the types forbid: sent raw.
    expectProblem(
      await t.raw('PUT', '/api/v1/identity/tbac/mode', { key: tenant.key, body: { mode: 'strict' } }),
      400,
      'validation_failed',
    );
    const reader = await t.key(tenant.key, ['settings:read']);
    expect((await getMode(reader)).response.status).toBe(200);
    expectProblem(await putMode('audit', reader), 403, 'forbidden');
    const events = await auditEvents(tenant.key, { action: 'tenant.settings_updated' });
    expect(events[0].detail).toEqual({ tbacMode: 'enforce' });
  });
});

describe('ExtAuthZ: the decision and its order', () => {
  it('allows with no_policy_audit_allow by default and denies with no_policy_enforce_deny in enforce mode', async () => {
    const tenant = await t.tenant('modes');
    const caller = await t.agent(tenant.key);
    const callee = await t.agent(tenant.key);
    const { access_token } = await exchange(t, (await svidFor(t, tenant.key, caller.id)).svid, callee.id, 'tools:search');
    expect((await authorize({ token: access_token, tool: 'search', callee: callee.id })).data!).toEqual({
      allowed: true,
      reason: 'no_policy_audit_allow',
    });
    await setMode('enforce', tenant.key);
    expect((await authorize({ token: access_token, tool: 'search', callee: callee.id })).data!).toEqual({
      allowed: false,
      reason: 'no_policy_enforce_deny',
    });
  });

  it('answers token_invalid (200) for missing, malformed, tampered, wrong-typ, expired, revoked and foreign-audience tokens', async () => {
    const { caller, callee, token } = await pair('tools:search');
    const invalid = async (body: Partial<AuthorizeInput>, headers: Record<string, string> = {}) => {
      const res = await authorize({ tool: 'search', callee: callee.id, ...body }, headers);
      expect(res.response.status).toBe(200);
      expect(res.data).toMatchObject({ allowed: false, reason: 'token_invalid' });
    };
    await invalid({});
    await invalid({ token: 'garbage' });
    await invalid({ token: tamper(token) });
    // An SVID (typ JWT) is not an access token.
    await invalid({ token: (await svidFor(t, acme.key, caller.id, 'x')).svid });
    // Wrong callee: the token's audience is another agent.
    const other = await t.agent(acme.key);
    await invalid({ token, callee: other.id });
    // A client_credentials token (for the API) is not a delegation token.
    const [, hex] = /^agk_([0-9a-f]{32})_/.exec(acme.key)!;
    const keyId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    const cc = await postToken(t, { grant_type: 'client_credentials', client_id: keyId, client_secret: acme.key });
    expect(cc.response.status).toBe(200);
    await invalid({ token: cc.data!.access_token });
    // Expired.
    clock.advance(3601 * 1000);
    try {
      await invalid({ token });
    } finally {
      clock.advance(-3601 * 1000);
    }
    expect((await authorize({ token, tool: 'search', callee: callee.id })).data!.allowed).toBe(true);
    // Revoked: the caller's agent key is revoked.
    const jwks = await t.api().GET('/api/v1/identity/agents/{agentId}/jwks.json', { params: { path: { agentId: caller.id } } });
    const kid = jwks.data!.keys[0].kid;
    await t
      .api(acme.key)
      .DELETE('/api/v1/identity/agents/{agentId}/keys/{keyId}', { params: { path: { agentId: caller.id, keyId: kid } } });
    await invalid({ token });
  });

  it('takes the token from the bearer header, in three callee formats', async () => {
    const { callee, token } = await pair('tools:search');
    for (const c of [
      callee.id,
      spiffe(acme.id, callee.id),
      `${t.config.publicBaseUrl}/api/v1/identity/agents/${callee.id}/client-metadata.json`,
    ]) {
      const res = await authorize({ tool: 'search', callee: c }, { authorization: `Bearer ${token}` });
      expect(res.data, c).toEqual({ allowed: true, reason: 'no_policy_audit_allow' });
    }
    // The body token wins over the header.
    expect(
      (await authorize({ token: 'garbage', tool: 'search', callee: callee.id }, { authorization: `Bearer ${token}` })).data!.reason,
    ).toBe('token_invalid');
    // A SPIFFE callee naming another tenant does not match.
    expect((await authorize({ token, tool: 'search', callee: spiffe(globex.id, callee.id) })).data!.reason).toBe('token_invalid');
  });

  it('checks the tool against the scope before any policy', async () => {
    const { caller, callee, token } = await pair('tools:search');
    await policy({ callerAgentId: caller.id, calleeAgentId: callee.id, toolName: '*' });
    expect((await authorize({ token, tool: 'delete', callee: callee.id })).data!).toEqual({ allowed: false, reason: 'tool_not_in_scope' });
    expect((await authorize({ token, tool: 'search', callee: callee.id })).data!).toMatchObject({ allowed: true, reason: 'policy_allow' });
    const all = await pair('tools:*');
    expect((await authorize({ token: all.token, tool: 'anything.at-all', callee: all.callee.id })).data!).toEqual({
      allowed: true,
      reason: 'no_policy_audit_allow',
    });
  });

  it('takes JSON only, like the rest of the API (form bodies are for the OAuth endpoints)', async () => {
    const { callee, token } = await pair('tools:search');
    const form = new URLSearchParams({ token, tool: 'search', callee: callee.id }).toString();
    // Form bodies: a media type the operations do not take, sent raw.
    expectProblem(
      await t.raw('POST', '/api/v1/identity/authorize', {
        payload: form,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'unsupported_media_type',
    );
    const policyForm = new URLSearchParams({ callerAgentId: '*', calleeAgentId: '*', toolName: 'x' }).toString();
    expectProblem(
      await t.raw('POST', '/api/v1/identity/tbac/policies', {
        key: acme.key,
        payload: policyForm,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'unsupported_media_type',
    );
  });

  it('validates the request (400 problems) but never the token', async () => {
    // A missing tool or callee: bodies the types forbid, sent raw.
    const authorizeRaw = (body: Record<string, unknown>) => t.raw('POST', '/api/v1/identity/authorize', { body });
    expectProblem(await authorizeRaw({ token: 'x', callee: 'y' }), 400, 'validation_failed');
    expectProblem(await authorizeRaw({ token: 'x', tool: 'y' }), 400, 'validation_failed');
    expectProblem(await authorize({ token: 'x', tool: '*', callee: 'y' }), 400, 'validation_failed');
  });
});

describe('policy precedence', () => {
  const decide = async (token: string, tool: string, callee: string) => (await authorize({ token, tool, callee })).data!;

  it('the most specific matching policy decides', async () => {
    const { caller, callee, token } = await pair();
    const broad = await policy({ callerAgentId: '*', calleeAgentId: callee.id, toolName: '*', effect: 'allow' });
    expect(await decide(token, 'send', callee.id)).toEqual({ allowed: true, reason: 'policy_allow', policyId: broad.id });
    const exact = await policy({ callerAgentId: caller.id, calleeAgentId: callee.id, toolName: 'send', effect: 'deny' });
    expect(await decide(token, 'send', callee.id)).toEqual({ allowed: false, reason: 'policy_deny', policyId: exact.id });
    expect((await decide(token, 'read', callee.id)).policyId).toBe(broad.id);
    // Two exact fields beat one: (caller, callee, *) allow over (*, *, delete) deny.
    await policy({ callerAgentId: '*', calleeAgentId: '*', toolName: 'delete', effect: 'deny' });
    const two = await policy({ callerAgentId: caller.id, calleeAgentId: callee.id, toolName: '*', effect: 'allow' });
    expect(await decide(token, 'delete', callee.id)).toEqual({ allowed: true, reason: 'policy_allow', policyId: two.id });
    // Three beat two.
    const three = await policy({ callerAgentId: caller.id, calleeAgentId: callee.id, toolName: 'delete', effect: 'allow' });
    await updatePolicy(two.id, { effect: 'deny' });
    expect(await decide(token, 'delete', callee.id)).toEqual({ allowed: true, reason: 'policy_allow', policyId: three.id });
    expect(await decide(token, 'other', callee.id)).toEqual({ allowed: false, reason: 'policy_deny', policyId: two.id });
  });

  it('deny wins a tie between equally specific policies', async () => {
    const { caller, callee, token } = await pair();
    await policy({ callerAgentId: '*', calleeAgentId: callee.id, toolName: 'x', effect: 'allow' });
    const deny = await policy({ callerAgentId: caller.id, calleeAgentId: '*', toolName: 'x', effect: 'deny' });
    expect(await decide(token, 'x', callee.id)).toEqual({ allowed: false, reason: 'policy_deny', policyId: deny.id });
    // Order of creation does not matter.
    const second = await pair();
    const deny2 = await policy({ callerAgentId: second.caller.id, calleeAgentId: '*', toolName: 'y', effect: 'deny' });
    await policy({ callerAgentId: '*', calleeAgentId: second.callee.id, toolName: 'y', effect: 'allow' });
    expect(await decide(second.token, 'y', second.callee.id)).toEqual({ allowed: false, reason: 'policy_deny', policyId: deny2.id });
  });

  it('a policy whose conditions do not hold does not match', async () => {
    const { caller, callee, token } = await pair();
    const fallback = await policy({ callerAgentId: '*', calleeAgentId: callee.id, toolName: '*', effect: 'allow' });
    const expired = await policy({
      callerAgentId: caller.id,
      calleeAgentId: callee.id,
      toolName: 'a',
      effect: 'deny',
      conditions: { notAfter: '2020-01-01T00:00:00Z' },
    });
    expect((await decide(token, 'a', callee.id)).policyId).toBe(fallback.id);
    const future = await policy({
      callerAgentId: caller.id,
      calleeAgentId: callee.id,
      toolName: 'b',
      effect: 'deny',
      conditions: { notBefore: '2999-01-01T00:00:00Z' },
    });
    expect((await decide(token, 'b', callee.id)).policyId).toBe(fallback.id);
    const current = await policy({
      callerAgentId: caller.id,
      calleeAgentId: callee.id,
      toolName: 'c',
      effect: 'deny',
      conditions: { notBefore: '2020-01-01T00:00:00Z', notAfter: '2999-01-01T00:00:00Z' },
    });
    expect(await decide(token, 'c', callee.id)).toEqual({ allowed: false, reason: 'policy_deny', policyId: current.id });
    expect(expired.id && future.id).toBeTruthy();

    // Daily UTC windows around the current time (also across midnight).
    const hhmm = (offsetMin: number) => {
      const m = (((new Date().getUTCHours() * 60 + new Date().getUTCMinutes() + offsetMin) % 1440) + 1440) % 1440;
      return `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
    };
    const inside = await policy({
      callerAgentId: caller.id,
      calleeAgentId: callee.id,
      toolName: 'd',
      effect: 'deny',
      conditions: { timeWindow: { start: hhmm(-60), end: hhmm(60) } },
    });
    expect((await decide(token, 'd', callee.id)).policyId).toBe(inside.id);
    await policy({
      callerAgentId: caller.id,
      calleeAgentId: callee.id,
      toolName: 'e',
      effect: 'deny',
      conditions: { timeWindow: { start: hhmm(60), end: hhmm(120) } },
    });
    expect((await decide(token, 'e', callee.id)).policyId).toBe(fallback.id);
    // Moving the clock past notAfter makes a current policy stop matching.
    await updatePolicy(current.id, { conditions: { notAfter: new Date(clock.now() + 60_000).toISOString() } });
    expect((await decide(token, 'c', callee.id)).policyId).toBe(current.id);
    clock.advance(120_000);
    try {
      // The token is still valid (1 hour), the policy has expired.
      expect((await decide(token, 'c', callee.id)).policyId).toBe(fallback.id);
    } finally {
      clock.advance(-120_000);
    }
  });

  it('decides on the current actor of a delegation chain', async () => {
    const a = await t.agent(acme.key, { name: 'origin' });
    const b = await t.agent(acme.key, { name: 'middle' });
    const c = await t.agent(acme.key, { name: 'end' });
    const t1 = await exchange(t, (await svidFor(t, acme.key, a.id)).svid, b.id, 'tools:*');
    const r2 = await postToken(t, {
      ...exchangeParams(t1.access_token, c.id, 'tools:run'),
      subject_token_type: TT_ACCESS,
      actor_token: (await svidFor(t, acme.key, b.id)).svid,
      actor_token_type: TT_JWT,
    });
    expect(r2.response.status, JSON.stringify(r2.error)).toBe(200);
    await policy({ callerAgentId: a.id, calleeAgentId: c.id, toolName: 'run', effect: 'allow' });
    const denyB = await policy({ callerAgentId: b.id, calleeAgentId: c.id, toolName: 'run', effect: 'deny' });
    expect(await decide(r2.data!.access_token, 'run', c.id)).toEqual({ allowed: false, reason: 'policy_deny', policyId: denyB.id });
  });

  it('enforce mode denies without a matching policy but lets an allow policy through', async () => {
    const tenant = await t.tenant('enforcing');
    await setMode('enforce', tenant.key);
    const caller = await t.agent(tenant.key);
    const callee = await t.agent(tenant.key);
    const allow = await createPolicy({ callerAgentId: caller.id, calleeAgentId: callee.id, toolName: 'ok' }, tenant.key);
    const { access_token } = await exchange(t, (await svidFor(t, tenant.key, caller.id)).svid, callee.id, 'tools:ok');
    expect(await decide(access_token, 'ok', callee.id)).toEqual({ allowed: true, reason: 'policy_allow', policyId: allow.data!.id });
    await deletePolicy(allow.data!.id, tenant.key);
    expect(await decide(access_token, 'ok', callee.id)).toEqual({ allowed: false, reason: 'no_policy_enforce_deny' });
  });
});

describe('auditing decisions', () => {
  it("audits every decision in the token's tenant (not forged tokens, which have no trustworthy tenant)", async () => {
    const tenant = await t.tenant('audited');
    const caller = await t.agent(tenant.key);
    const callee = await t.agent(tenant.key);
    const { access_token } = await exchange(t, (await svidFor(t, tenant.key, caller.id)).svid, callee.id, 'tools:a');
    await createPolicy({ callerAgentId: caller.id, calleeAgentId: '*', toolName: 'a', effect: 'deny' }, tenant.key);
    const outcomes = [
      await authorize({ token: access_token, tool: 'a', callee: callee.id }),
      await authorize({ token: access_token, tool: 'b', callee: callee.id }),
      await authorize({ token: access_token, tool: 'a', callee: caller.id }),
      await authorize({ token: tamper(access_token), tool: 'a', callee: callee.id }),
    ].map((r) => r.data!.reason);
    expect(outcomes).toEqual(['policy_deny', 'tool_not_in_scope', 'token_invalid', 'token_invalid']);
    await t.services.identity.flush();
    const events = await auditEvents(tenant.key, { action: 'identity.authorization_decided' });
    expect(events).toHaveLength(3);
    expect(events.map((e) => (e.detail as { reason: string }).reason).sort()).toEqual([
      'policy_deny',
      'token_invalid',
      'tool_not_in_scope',
    ]);
    for (const e of events) expect(e).toMatchObject({ actorType: 'agent', actorId: caller.id, detail: { jti: expect.any(String) } });
    // Nothing leaks into other tenants' trails.
    const elsewhere = await auditEvents(globex.key, { action: 'identity.authorization_decided' });
    expect(elsewhere).toHaveLength(0);
  });

  it('writes queued decisions when the app closes', async () => {
    const other = await startApp();
    const tenant = await other.tenant();
    const caller = await other.agent(tenant.key);
    const callee = await other.agent(tenant.key);
    const { access_token } = await exchange(other, (await svidFor(other, tenant.key, caller.id)).svid, callee.id, 'tools:a');
    for (let i = 0; i < 3; i++)
      await other.api().POST('/api/v1/identity/authorize', { body: { token: access_token, tool: 'a', callee: callee.id } });
    const answeredBy = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await other.app.close(); // flushes
    const n = await other.db.kysely
      .selectFrom('audit_events')
      .select(['id', 'created_at'])
      .where('action', '=', 'identity.authorization_decided')
      .orderBy('id')
      .execute();
    expect(n).toHaveLength(3);
    // Stamped when decided, not when the batch was written (one multi-row insert).
    for (const row of n) expect(row.created_at <= answeredBy).toBe(true);
    await other.close().catch(() => {});
  });
});

describe('performance (anchor: OPA decision median ~0.2 ms, p99 ~1.5 ms)', () => {
  it('decides in-process without a database write per decision', async () => {
    const { caller, callee, token } = await pair('tools:*');
    await policy({ callerAgentId: caller.id, calleeAgentId: callee.id, toolName: 'hot', effect: 'allow' });
    const identity = t.services.identity;
    for (let i = 0; i < 50; i++) await identity.authorize(token, 'hot', callee.id);
    const times: number[] = [];
    for (let i = 0; i < 400; i++) {
      const start = process.hrtime.bigint();
      const r = await identity.authorize(token, 'hot', callee.id);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
      expect(r.reason).toBe('policy_allow');
    }
    times.sort((x, y) => x - y);
    const median = times[200];
    const p99 = times[396];
    process.stdout.write(`authorize (${t.db.dialect}, in-process): median ${median.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms\n`);
    // A regression guard with room for a busy 2-core machine, not the benchmark itself: the hot path
    // must not go to the database (or verify the signature again) for every decision.
    expect(median).toBeLessThan(1);
  });

  it('sees changes made by other processes within the 1 s cache lifetime', async () => {
    const { caller, callee, token } = await pair('tools:*');
    expect((await t.services.identity.authorize(token, 'tool', callee.id)).reason).toBe('no_policy_audit_allow');
    // Another replica writes a policy straight into the shared database.
    const at = new Date().toISOString();
    await t.db.kysely
      .insertInto('tbac_policies')
      .values({
        id: `01a00000-0000-7000-8000-${Date.now().toString().slice(-12)}`,
        tenant_id: acme.id,
        caller_agent_id: caller.id,
        callee_agent_id: callee.id,
        tool_name: 'tool',
        effect: 'deny',
        description: null,
        conditions: null,
        created_at: at,
        updated_at: at,
      })
      .execute();
    // Until the cache lifetime has passed on the app's clock, the decision is the cached one.
    clock.advance(DECISION_CACHE_MS - 1);
    expect((await t.services.identity.authorize(token, 'tool', callee.id)).reason).toBe('no_policy_audit_allow');
    clock.advance(1);
    expect((await t.services.identity.authorize(token, 'tool', callee.id)).reason).toBe('policy_deny');
  });
});
