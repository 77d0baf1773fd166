import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dialect, expectProblem, type Replica, startApp, startReplicas, type TestApp } from '../helpers/app.js';
import {
  ASSERTION_TYPE,
  decodePart,
  exchange,
  exchangeParams,
  expectOAuthError,
  joseVerify,
  postToken,
  svidBody,
  svidFor,
} from './helpers.js';

/**
 * The identity of an agent follows the agent's life: deleting it ends every token that names it
 * (issue 21 item 5), pausing a registered agent suspends its identity and resuming restores it
 * (item 18); introspection shows every claim (item 16); a delegation token on the main API is
 * refused with a reason (item 23); the badge lists the agent's skills (item 17).
 */

let t: TestApp;
let acme: { id: string; key: string };

beforeAll(async () => {
  t = await startApp();
  acme = await t.tenant('acme');
});
afterAll(() => t.close());

const authorize = (token: string, tool: string, callee: string) =>
  t.api(acme.key).POST('/api/v1/identity/authorize', { body: { token, tool, callee } });
const introspect = (token: string) => t.api(acme.key).POST('/api/v1/identity/oauth/introspect', { body: { token } });
const getAgent = (id: string, key: string = acme.key) => t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id } } });
const updateAgent = (id: string, status: 'available' | 'paused') =>
  t.api(acme.key).POST('/api/v1/agents/{id}', { params: { path: { id } }, body: { status } });
const pause = (id: string) => t.api(acme.key).POST('/api/v1/agents/{id}/pause', { params: { path: { id } } });
const resume = (id: string) => t.api(acme.key).POST('/api/v1/agents/{id}/resume', { params: { path: { id } } });
const svidOf = (agentId: string) =>
  t.api(acme.key).POST('/api/v1/identity/agents/{agentId}/svid', { params: { path: { agentId } }, body: svidBody(t.config.issuer) });
const metadata = (agentId: string) =>
  t.api().GET('/api/v1/identity/agents/{agentId}/client-metadata.json', { params: { path: { agentId } } });

/** An access token for the main API, obtained by the agent itself (private_key_jwt). */
async function agentApiToken(agentId: string) {
  const assertion = await t.services.identity.signClientAssertion(acme.id, agentId);
  const res = await postToken(t, {
    grant_type: 'client_credentials',
    client_assertion_type: ASSERTION_TYPE,
    client_assertion: assertion,
  });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.data!.access_token;
}

describe('deleting an agent (item 5)', () => {
  it('ends every token where it is subject, actor or audience, and revokes its keys', async () => {
    const a = await t.agent(acme.key, { name: 'A' });
    const b = await t.agent(acme.key, { name: 'B' });
    const c = await t.agent(acme.key, { name: 'C' });
    // A -> B (B is audience), B -> C re-delegating A's token (B is actor, A subject), C -> A.
    const aToB = (await exchange(t, (await svidFor(t, acme.key, a.id)).svid, b.id, 'tools:*')).access_token;
    const bSvid = (await svidFor(t, acme.key, b.id)).svid;
    const redelegated = await postToken(
      t,
      exchangeParams(aToB, c.id, 'tools:search', {
        subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        actor_token: bSvid,
        actor_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      }),
    );
    expect(redelegated.response.status, JSON.stringify(redelegated.error)).toBe(200);
    const bToC = redelegated.data!.access_token;
    const cToA = (await exchange(t, (await svidFor(t, acme.key, c.id)).svid, a.id, 'tools:*')).access_token;
    const cToB = (await exchange(t, (await svidFor(t, acme.key, c.id)).svid, b.id, 'tools:*')).access_token;
    const bApi = await agentApiToken(b.id);
    const bSvidForLater = (await svidFor(t, acme.key, b.id)).svid;

    expect((await authorize(aToB, 'search', b.id)).data!).toMatchObject({ allowed: true });
    expect((await authorize(bToC, 'search', c.id)).data!).toMatchObject({ allowed: true });
    expect((await authorize(cToB, 'search', b.id)).data!).toMatchObject({ allowed: true });
    expect((await introspect(bApi)).data!.active).toBe(true);
    expect((await getAgent(b.id, bApi)).response.status).toBe(200);

    expect((await t.api(acme.key).DELETE('/api/v1/agents/{id}', { params: { path: { id: b.id } } })).response.status).toBe(204);

    // B is the audience, the actor (and, for its API token, the subject): all refused, at once.
    for (const [token, callee] of [
      [aToB, b.id],
      [bToC, c.id],
      [cToB, b.id],
    ] as const) {
      const decision = await authorize(token, 'search', callee);
      expect(decision.data, `${callee}`).toMatchObject({ allowed: false, reason: 'token_invalid' });
      expect((await introspect(token)).data!).toEqual({ active: false });
    }
    expect((await introspect(bApi)).data!).toEqual({ active: false });
    expectProblem(await getAgent(b.id, bApi), 401, 'invalid_credentials');
    // Its SVIDs can no longer be exchanged, and its keys are revoked (not published, not usable).
    expectOAuthError(await postToken(t, exchangeParams(bSvidForLater, a.id, 'tools:x')), 400, 'invalid_grant');
    const keys = await t.db.kysely
      .selectFrom('identity_agent_keys')
      .select(['status', 'revoked_at'])
      .where('agent_id', '=', b.id)
      .execute();
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.status === 'revoked' && k.revoked_at)).toBe(true);

    // Tokens naming only other agents are untouched.
    expect((await authorize(cToA, 'search', a.id)).data!).toMatchObject({ allowed: true });
    expect((await introspect(cToA)).data!.active).toBe(true);
  });
});

describe('a registered agent paused and resumed (item 18)', () => {
  it('pauses (identity suspended) and resumes back to registered, never available', async () => {
    const ext = await t.agent(acme.key, { name: 'Outside', hosting: 'external' });
    const other = await t.agent(acme.key, { name: 'Inside' });
    const extToOther = (await exchange(t, (await svidFor(t, acme.key, ext.id)).svid, other.id, 'tools:*')).access_token;
    const otherToExt = (await exchange(t, (await svidFor(t, acme.key, other.id)).svid, ext.id, 'tools:*')).access_token;
    const extSvid = (await svidFor(t, acme.key, ext.id)).svid;
    const extApi = await agentApiToken(ext.id);
    expect((await authorize(extToOther, 'x', other.id)).data!.allowed).toBe(true);

    const paused = await pause(ext.id);
    expect(paused.response.status, JSON.stringify(paused.error)).toBe(200);
    expect(paused.data!.status).toBe('paused');

    // Suspended: authorize denies its tokens, no new SVIDs, badges, exchanges or API tokens.
    expect((await authorize(extToOther, 'x', other.id)).data!).toMatchObject({ allowed: false, reason: 'token_invalid' });
    expect((await authorize(otherToExt, 'x', ext.id)).data!).toMatchObject({ allowed: false, reason: 'token_invalid' });
    expect((await introspect(extApi)).data!).toEqual({ active: false });
    expectProblem(await svidOf(ext.id), 409, 'agent_suspended');
    expectProblem(await metadata(ext.id), 409, 'agent_suspended');
    expectOAuthError(await postToken(t, exchangeParams(extSvid, other.id, 'tools:x')), 400, 'invalid_grant');
    const otherSvid = (await svidFor(t, acme.key, other.id)).svid;
    expectOAuthError(await postToken(t, exchangeParams(otherSvid, ext.id, 'tools:x')), 400, 'invalid_target');
    const assertion = await t.services.identity.signClientAssertion(acme.id, ext.id);
    expectOAuthError(
      await postToken(t, { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: assertion }),
      401,
      'invalid_client',
    );
    // A paused registered agent cannot be "resumed" into available through an update either.
    expectProblem(await updateAgent(ext.id, 'available'), 409, 'agent_not_executable');
    expectProblem(await pause(ext.id), 409, 'agent_already_paused');

    const resumed = await resume(ext.id);
    expect(resumed.response.status, JSON.stringify(resumed.error)).toBe(200);
    expect(resumed.data!.status).toBe('registered');
    expect((await authorize(extToOther, 'x', other.id)).data!.allowed).toBe(true);
    expect((await introspect(extApi)).data!.active).toBe(true);
    expect((await svidOf(ext.id)).response.status).toBe(200);
    expect((await metadata(ext.id)).response.status).toBe(200);

    // Through the update: paused, then back (to registered); available is refused.
    const viaUpdate = await updateAgent(ext.id, 'paused');
    expect(viaUpdate.response.status, JSON.stringify(viaUpdate.error)).toBe(200);
    expect(viaUpdate.data!.status).toBe('paused');
    expect((await authorize(extToOther, 'x', other.id)).data!.allowed).toBe(false);
    expectProblem(await updateAgent(ext.id, 'available'), 409, 'agent_not_executable');
    expect((await resume(ext.id)).data!.status).toBe('registered');
    expectProblem(await updateAgent(ext.id, 'available'), 409, 'agent_not_executable');
    expect((await getAgent(ext.id)).data!.status).toBe('registered');
  });
});

describe('introspection and the main API (items 16, 23)', () => {
  it('introspection of an active token returns every claim of the token, tenant_id included', async () => {
    const a = await t.agent(acme.key);
    const b = await t.agent(acme.key);
    const token = (await exchange(t, (await svidFor(t, acme.key, a.id)).svid, b.id, 'tools:search')).access_token;
    const claims = decodePart(token, 1);
    const res = await introspect(token);
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual({ active: true, token_type: 'Bearer', ...claims });
    expect(res.data!.tenant_id).toBe(acme.id);

    const api = await agentApiToken(a.id);
    expect((await introspect(api)).data!).toEqual({ active: true, token_type: 'Bearer', ...decodePart(api, 1) });
  });

  it('a valid delegation token on the main API is a 401 that says what the token is for', async () => {
    const a = await t.agent(acme.key);
    const b = await t.agent(acme.key);
    const token = (await exchange(t, (await svidFor(t, acme.key, a.id)).svid, b.id, 'tools:search')).access_token;
    const res = await t.api(token).GET('/api/v1/agents');
    expectProblem(res, 401, 'delegation_token');
    expect(res.error!.detail).toMatch(/agent-to-agent/);
    expect(res.error!.detail).not.toMatch(/unknown, revoked or expired/);
    expect(res.response.headers.get('www-authenticate')).toBe('Bearer');
  });
});

describe("the badge lists the agent's skills (item 17)", () => {
  const badgeOf = async (agentId: string) => {
    const res = await metadata(agentId);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    return res.data!.badge;
  };
  const createSkill = async (name: string, metadata: Record<string, string> = {}) => {
    const res = await t.api(acme.key).POST('/api/skills', {
      body: { name, description: `${name} skill`, category: 'sales', instructions: 'Do it.', metadata },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    return { ...res.data!, version: metadata.version ?? null };
  };

  it('holds the assigned, enabled skills (id, name, version) and is re-issued when assignments change', async () => {
    const a = await t.agent(acme.key, { name: 'Seller' });
    const pricing = await createSkill('pricing', { version: '1.2' });
    const returns = await createSkill('returns');
    const first = await badgeOf(a.id);
    expect(decodePart(first, 1).credentialSubject.capabilities.skills).toEqual([]);

    const assign = (id: string) => t.api(acme.key).POST('/api/skills/{id}/assign', { params: { path: { id } }, body: { agentId: a.id } });
    expect((await assign(pricing.id)).response.status).toBe(201);
    expect((await assign(returns.id)).response.status).toBe(201);
    const second = await badgeOf(a.id);
    expect(second).not.toBe(first);
    const skills = decodePart(second, 1).credentialSubject.capabilities.skills;
    expect(skills).toHaveLength(2);
    expect(skills).toEqual(
      expect.arrayContaining([
        { id: pricing.id, name: 'pricing', version: pricing.version },
        { id: returns.id, name: 'returns', version: returns.version },
      ]),
    );

    // Disabled assignments are not capabilities.
    const disabled = await t.api(acme.key).PATCH('/api/skills/{id}/assignments/{agentId}', {
      params: { path: { id: returns.id, agentId: a.id } },
      body: { enabled: false },
    });
    expect(disabled.response.status, JSON.stringify(disabled.error)).toBe(200);
    const third = await badgeOf(a.id);
    expect(decodePart(third, 1).credentialSubject.capabilities.skills).toEqual([
      { id: pricing.id, name: 'pricing', version: pricing.version },
    ]);

    // The earlier badges stay verifiable until they expire.
    for (const badge of [first, second]) {
      const { payload } = await joseVerify(t, badge, { typ: 'vc+jwt' });
      expect(payload.exp! * 1000).toBeGreaterThan(Date.now());
    }
  });
});

describe.skipIf(dialect !== 'postgres')('two replicas on one PostgreSQL database (items 5, 18)', () => {
  let started: Awaited<ReturnType<typeof startReplicas>> | undefined;
  const replicas: Replica[] = [];

  beforeAll(async () => {
    started = await startReplicas(2);
    replicas.push(...started.replicas);
  });
  afterAll(async () => {
    await started?.close();
  });

  const call = async (i: number, method: string, url: string, key: string | null, body?: unknown) => {
    const res = await replicas[i].app.inject({
      method: method as 'GET',
      url,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
  };
  /** Waits for replica i to hear (NOTIFY) that the agents table changed since `stamp`. */
  const heard = (i: number, stamp: number | null) =>
    vi.waitFor(() => expect(replicas[i].db.changes.stamp('agents')).not.toBe(stamp), { timeout: 10_000, interval: 5 });

  it("a deletion on one replica ends the agent's tokens on the other as soon as it is notified", async () => {
    const { apiKey: key } = await replicas[0].services.tenancy.createTenant('replicated');
    const agent = async (name: string, extra: Record<string, unknown> = {}) =>
      (await call(0, 'POST', '/api/v1/agents', key, { name, appId: 'x', ...extra })).body.id as string;
    const a = await agent('A');
    const b = await agent('B');
    const ext = await agent('E', { hosting: 'external' });
    const svid = async (id: string) =>
      (await call(0, 'POST', `/api/v1/identity/agents/${id}/svid`, key, { audience: 'http://agentry.test' })).body.svid as string;
    const exchangeOn = async (subject: string, audience: string) => {
      const res = await replicas[0].services.identity.exchange({
        subject_token: subject,
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        audience: [audience],
        resource: [],
        scope: 'tools:*',
      });
      return res.access_token;
    };
    const aToB = await exchangeOn(await svid(a), b);
    const extToA = await exchangeOn(await svid(ext), a);
    const decide = async (i: number, token: string, callee: string) =>
      (await call(i, 'POST', '/api/v1/identity/authorize', key, { token, tool: 't', callee })).body;
    // Replica 1 has verified and cached both tokens.
    expect(await decide(1, aToB, b)).toMatchObject({ allowed: true });
    expect(await decide(1, extToA, a)).toMatchObject({ allowed: true });

    let stamp = replicas[1].db.changes.stamp('agents');
    expect((await call(0, 'DELETE', `/api/v1/agents/${b}`, key)).status).toBe(204);
    await heard(1, stamp);
    expect(await decide(1, aToB, b)).toMatchObject({ allowed: false, reason: 'token_invalid' });
    expect((await call(1, 'POST', '/api/v1/identity/oauth/introspect', key, { token: aToB })).body).toEqual({ active: false });

    stamp = replicas[1].db.changes.stamp('agents');
    expect((await call(0, 'POST', `/api/v1/agents/${ext}/pause`, key)).status).toBe(200);
    await heard(1, stamp);
    expect(await decide(1, extToA, a)).toMatchObject({ allowed: false, reason: 'token_invalid' });
    stamp = replicas[1].db.changes.stamp('agents');
    expect((await call(0, 'POST', `/api/v1/agents/${ext}/resume`, key)).body.status).toBe('registered');
    await heard(1, stamp);
    expect(await decide(1, extToA, a)).toMatchObject({ allowed: true });
  });
});
