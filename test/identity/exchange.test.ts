import { SignJWT, decodeProtectedHeader, generateKeyPair } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { startApp, type TestApp } from '../helpers/app.js';
import {
  FORM,
  TT_ACCESS,
  TT_JWT,
  decodePart,
  exchange,
  exchangeParams,
  expectOAuthError,
  form,
  hasJwcrypto,
  joseVerify,
  platformJwks,
  postToken,
  pyVerify,
  svidFor,
  tamper,
  tokenRequest,
} from './helpers.js';

let t: TestApp;
let acme: { id: string; key: string };
let globex: { id: string; key: string };
let a: { id: string };
let b: { id: string };
let c: { id: string };
let d: { id: string };
let foreign: { id: string };
/** The app's clock: tokens expire by moving it. */
const clock = new ManualClock();

beforeAll(async () => {
  t = await startApp({}, { clock });
  acme = await t.tenant('acme');
  globex = await t.tenant('globex');
  [a, b, c, d] = [
    await t.agent(acme.key, { name: 'A' }),
    await t.agent(acme.key, { name: 'B' }),
    await t.agent(acme.key, { name: 'C' }),
    await t.agent(acme.key, { name: 'D' }),
  ];
  foreign = await t.agent(globex.key, { name: 'G' });
});
afterAll(() => t.close());

const spiffe = (tenant: string, agent: string) => `spiffe://agentry.local/tenant/${tenant}/agent/${agent}`;
const clientUrl = (agent: string) => `${t.config.publicBaseUrl}/api/v1/identity/agents/${agent}/client-metadata.json`;
/** The kid of the agent's published key (its public JWKS). */
const agentKid = async (agentId: string) =>
  (await t.api().GET('/api/v1/identity/agents/{agentId}/jwks.json', { params: { path: { agentId } } })).data!.keys[0].kid;
const revokeKey = (agentId: string, keyId: string) =>
  t.api(acme.key).DELETE('/api/v1/identity/agents/{agentId}/keys/{keyId}', { params: { path: { agentId, keyId } } });

describe('token exchange: success', () => {
  it('exchanges an SVID (form-encoded) for an at+jwt with tool scopes and act', async () => {
    const { svid, spiffeId } = await svidFor(t, acme.key, a.id);
    const { data, error, response } = await postToken(t, exchangeParams(svid, b.id, 'tools:search tools:send_email'));
    expect(response.status, JSON.stringify(error)).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('pragma')).toBe('no-cache');
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(data).toEqual({
      access_token: expect.any(String),
      issued_token_type: TT_ACCESS,
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'tools:search tools:send_email',
    });
    const header = decodeProtectedHeader(data!.access_token);
    expect(header).toEqual({ alg: 'ES256', kid: expect.any(String), typ: 'at+jwt' });
    const { payload } = await joseVerify(t, data!.access_token, { typ: 'at+jwt', audience: spiffe(acme.id, b.id) });
    expect(payload).toMatchObject({
      iss: t.config.issuer,
      sub: spiffeId,
      aud: spiffe(acme.id, b.id),
      client_id: clientUrl(a.id),
      scope: 'tools:search tools:send_email',
      act: { sub: spiffeId },
    });
    expect(typeof payload.jti).toBe('string');
    expect(payload.exp! - payload.iat!).toBe(3600);
  });

  it.skipIf(!hasJwcrypto)('issues tokens Python jwcrypto verifies', async () => {
    const { svid } = await svidFor(t, acme.key, a.id);
    const { access_token } = await exchange(t, svid, b.id, 'tools:x');
    const jwks = await platformJwks(t);
    const ok = pyVerify(jwks, access_token, t.config.issuer);
    expect(ok.ok, JSON.stringify(ok)).toBe(true);
    if (ok.ok) {
      expect(ok.header.typ).toBe('at+jwt');
      expect(ok.claims.aud).toBe(spiffe(acme.id, b.id));
      expect(ok.claims.act).toEqual({ sub: spiffe(acme.id, a.id) });
    }
    expect(pyVerify(jwks, tamper(access_token), t.config.issuer).ok).toBe(false);
  });

  it('takes a JSON body too', async () => {
    const { svid } = await svidFor(t, acme.key, a.id);
    const res = await t.api().POST('/api/v1/identity/oauth/token', { body: exchangeParams(svid, b.id, 'tools:*') });
    expect(res.response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.scope).toBe('tools:*');
  });

  it('accepts the audience in all three formats, resolving to the same agent', async () => {
    const { svid } = await svidFor(t, acme.key, a.id);
    const auds = [];
    for (const audience of [spiffe(acme.id, b.id), clientUrl(b.id), b.id]) {
      const { access_token } = await exchange(t, svid, audience, 'tools:x');
      auds.push(decodePart(access_token, 1).aud);
    }
    expect(auds).toEqual([spiffe(acme.id, b.id), spiffe(acme.id, b.id), spiffe(acme.id, b.id)]);
  });

  it('lets audience and resource repeat when they name the same agent', async () => {
    const { svid } = await svidFor(t, acme.key, a.id);
    const res = await postToken(t, { ...exchangeParams(svid, [b.id, spiffe(acme.id, b.id)], 'tools:x'), resource: clientUrl(b.id) });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const viaResource = await postToken(t, { ...exchangeParams(svid, [], 'tools:x'), resource: b.id });
    expect(viaResource.response.status, JSON.stringify(viaResource.error)).toBe(200);
  });

  it('accepts an SVID whose aud is the token endpoint URL', async () => {
    const { svid } = await svidFor(t, acme.key, a.id, `${t.config.publicBaseUrl}/api/v1/identity/oauth/token`);
    await exchange(t, svid, b.id, 'tools:x');
  });

  it('deduplicates scopes and tolerates extra spaces', async () => {
    const { svid } = await svidFor(t, acme.key, a.id);
    const res = await postToken(t, exchangeParams(svid, b.id, ' tools:x  tools:y tools:x '));
    expect(res.data!.scope).toBe('tools:x tools:y');
  });

  it('audits the exchange', async () => {
    const { svid } = await svidFor(t, acme.key, a.id);
    const { access_token } = await exchange(t, svid, c.id, 'tools:audited');
    const { data } = await t.api(acme.key).GET('/api/v1/audit-events', {
      params: { query: { action: 'identity.token_exchanged', resourceId: c.id } },
    });
    const events = data!.events;
    expect(events[0]).toMatchObject({
      actorType: 'agent',
      actorId: a.id,
      detail: { jti: decodePart(access_token, 1).jti, scope: 'tools:audited' },
    });
  });
});

describe('SVID validation rules (JWT-SVID standard)', () => {
  /** An SVID signed by the platform and recorded, with header and claims as given. */
  async function customSvid(opts: { typ?: string; aud?: string | string[] | null; kid?: boolean; jti?: boolean }) {
    const identity = t.services.identity;
    const { kid, key } = await identity.platformKeys.signingKey();
    const jti = crypto.randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT(opts.jti === false ? {} : { jti })
      .setProtectedHeader({ alg: 'ES256', ...(opts.kid === false ? {} : { kid }), ...(opts.typ ? { typ: opts.typ } : {}) })
      .setIssuer(t.config.issuer)
      .setSubject(spiffe(acme.id, a.id))
      .setIssuedAt(now)
      .setExpirationTime(now + 300);
    if (opts.aud !== null) jwt.setAudience(opts.aud ?? t.config.issuer);
    const token = await jwt.sign(key);
    const agentKey = await identity.agentKeys.ensureActive(acme.id, a.id);
    await t.db.kysely
      .insertInto('identity_tokens')
      .values({
        jti,
        tenant_id: acme.id,
        kind: 'svid',
        agent_id: a.id,
        client_id: null,
        api_key_id: null,
        agent_key_id: agentKey.kid,
        parent_jti: null,
        issued_at: new Date().toISOString(),
        expires_at: new Date((now + 300) * 1000).toISOString(),
        revoked_at: null,
      })
      .execute();
    return token;
  }
  const tryExchange = async (svid: string) => postToken(t, exchangeParams(svid, b.id, 'tools:x'));

  it('accepts typ JWT, JOSE or none, and an aud array containing the issuer', async () => {
    expect((await tryExchange(await customSvid({ typ: 'JWT' }))).response.status).toBe(200);
    expect((await tryExchange(await customSvid({ typ: 'JOSE' }))).response.status).toBe(200);
    expect((await tryExchange(await customSvid({}))).response.status).toBe(200);
    expect((await tryExchange(await customSvid({ aud: ['https://x.example', t.config.issuer] }))).response.status).toBe(200);
  });

  it('refuses an SVID without kid, without aud, without jti, or with another typ', async () => {
    expectOAuthError(await tryExchange(await customSvid({ kid: false })), 400, 'invalid_grant');
    expectOAuthError(await tryExchange(await customSvid({ aud: null })), 400, 'invalid_grant');
    expectOAuthError(await tryExchange(await customSvid({ jti: false })), 400, 'invalid_grant');
    expectOAuthError(await tryExchange(await customSvid({ typ: 'at+jwt' })), 400, 'invalid_request'); // an access token needs an actor token
    expectOAuthError(await tryExchange(await customSvid({ typ: 'vc+jwt' })), 400, 'invalid_grant');
    // The control: the same construction with everything present works.
    expect((await tryExchange(await customSvid({ typ: 'JWT' }))).response.status).toBe(200);
  });
});

describe('delegation chains (act)', () => {
  it('nests act when an access token is re-delegated: the current actor outermost, the oldest deepest', async () => {
    const svidA = await svidFor(t, acme.key, a.id);
    const svidB = await svidFor(t, acme.key, b.id);
    const svidC = await svidFor(t, acme.key, c.id);
    const t1 = await exchange(t, svidA.svid, b.id, 'tools:*');

    const r2 = await postToken(t, {
      ...exchangeParams(t1.access_token, c.id, 'tools:search'),
      subject_token_type: TT_ACCESS,
      actor_token: svidB.svid,
      actor_token_type: TT_JWT,
    });
    expect(r2.response.status, JSON.stringify(r2.error)).toBe(200);
    const p2 = decodePart(r2.data!.access_token, 1);
    expect(p2.sub).toBe(svidA.spiffeId);
    expect(p2.aud).toBe(spiffe(acme.id, c.id));
    expect(p2.client_id).toBe(clientUrl(b.id));
    expect(p2.act).toEqual({ sub: svidB.spiffeId, act: { sub: svidA.spiffeId } });

    const r3 = await postToken(t, {
      ...exchangeParams(r2.data!.access_token, d.id, 'tools:search'),
      subject_token_type: TT_ACCESS,
      actor_token: svidC.svid,
      actor_token_type: TT_JWT,
    });
    expect(r3.response.status, JSON.stringify(r3.error)).toBe(200);
    expect(decodePart(r3.data!.access_token, 1).act).toEqual({
      sub: svidC.spiffeId,
      act: { sub: svidB.spiffeId, act: { sub: svidA.spiffeId } },
    });
  });

  it("names the actor token's agent as actor when an SVID subject is exchanged with an actor token", async () => {
    const svidA = await svidFor(t, acme.key, a.id);
    const svidB = await svidFor(t, acme.key, b.id);
    const res = await postToken(t, {
      ...exchangeParams(svidA.svid, c.id, 'tools:x'),
      actor_token: svidB.svid,
      actor_token_type: TT_JWT,
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const p = decodePart(res.data!.access_token, 1);
    expect(p.sub).toBe(svidA.spiffeId);
    expect(p.act).toEqual({ sub: svidB.spiffeId });
  });

  it('refuses re-delegation without an actor token, by another agent than the audience, or wider than granted', async () => {
    const svidA = await svidFor(t, acme.key, a.id);
    const svidB = await svidFor(t, acme.key, b.id);
    const svidC = await svidFor(t, acme.key, c.id);
    const t1 = await exchange(t, svidA.svid, b.id, 'tools:search');
    const base = { ...exchangeParams(t1.access_token, c.id, 'tools:search'), subject_token_type: TT_ACCESS };
    expectOAuthError(await postToken(t, base), 400, 'invalid_request');
    expectOAuthError(await postToken(t, { ...base, actor_token: svidC.svid, actor_token_type: TT_JWT }), 400, 'invalid_grant');
    // Scope escalation: tools:delete was never granted.
    const wider = await postToken(t, { ...base, scope: 'tools:search tools:delete', actor_token: svidB.svid, actor_token_type: TT_JWT });
    expectOAuthError(wider, 400, 'insufficient_scope');
    expectOAuthError(
      await postToken(t, { ...base, scope: 'tools:*', actor_token: svidB.svid, actor_token_type: TT_JWT }),
      400,
      'insufficient_scope',
    );
    // Within the grant it works.
    expect((await postToken(t, { ...base, actor_token: svidB.svid, actor_token_type: TT_JWT })).response.status).toBe(200);
  });

  it('refuses an actor of another tenant', async () => {
    const svidA = await svidFor(t, acme.key, a.id);
    const svidG = await svidFor(t, globex.key, foreign.id);
    expectOAuthError(
      await postToken(t, { ...exchangeParams(svidA.svid, b.id, 'tools:x'), actor_token: svidG.svid, actor_token_type: TT_JWT }),
      400,
      'invalid_grant',
    );
  });
});

describe('token exchange: errors (RFC 6749 bodies)', () => {
  let svid: string;
  beforeAll(async () => {
    svid = (await svidFor(t, acme.key, a.id)).svid;
  });
  const ok = () => exchangeParams(svid, b.id, 'tools:x');

  it('unsupported_grant_type', async () => {
    expectOAuthError(await postToken(t, { ...ok(), grant_type: 'password' }), 400, 'unsupported_grant_type');
    expectOAuthError(await postToken(t, { ...ok(), grant_type: 'authorization_code' }), 400, 'unsupported_grant_type');
  });

  it('invalid_request for malformed requests', async () => {
    const { grant_type: _g, ...noGrant } = ok();
    const { subject_token: _s, ...noSubject } = ok();
    const { subject_token_type: _st, ...noType } = ok();
    const { audience: _a, ...noAudience } = ok();
    const { scope: _sc, ...noScope } = ok();
    const cases: Record<string, string | string[] | undefined>[] = [
      noGrant,
      noSubject,
      noType,
      noAudience,
      noScope,
      { ...ok(), scope: '' },
      { ...ok(), scope: ['tools:x', 'tools:y'] }, // scope must not repeat
      { ...ok(), subject_token_type: 'urn:example:unknown' },
      { ...ok(), subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' },
      { ...ok(), subject_token_type: TT_ACCESS }, // an SVID is not an access token
      { ...ok(), actor_token: svid }, // actor_token_type is required with actor_token
      { ...ok(), actor_token_type: TT_JWT }, // ...and forbidden without it
      { ...ok(), requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' },
      { ...ok(), client_secret: 'x' },
    ];
    // Malformed forms (no grant_type, a repeated scope among them): sent raw.
    for (const params of cases) expectOAuthError(await tokenRequest(t, params), 400, 'invalid_request');
    // Client authentication is refused with token exchange (the SVID authenticates).
    expectOAuthError(await postToken(t, ok(), { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }), 400, 'invalid_request');
    // Not form, not JSON; a broken JSON body; no body; a prototype key: raw.
    expectOAuthError(
      await t.raw('POST', '/api/v1/identity/oauth/token', { payload: 'x', headers: { 'content-type': 'text/plain' } }),
      400,
      'invalid_request',
    );
    expectOAuthError(
      await t.raw('POST', '/api/v1/identity/oauth/token', {
        payload: '{"grant_type":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    );
    expectOAuthError(await t.raw('POST', '/api/v1/identity/oauth/token'), 400, 'invalid_request');
    expectOAuthError(
      await t.raw('POST', '/api/v1/identity/oauth/token', { payload: '__proto__=x&grant_type=y', headers: FORM }),
      400,
      'invalid_request',
    );
  });

  it('invalid_grant for bad subject tokens: tampered, wrong typ, expired, forged algorithms, unknown, revoked', async () => {
    const bad = async (subject: string, type = TT_JWT) =>
      expectOAuthError(await postToken(t, { ...ok(), subject_token: subject, subject_token_type: type }), 400, 'invalid_grant');
    await bad(tamper(svid));
    await bad('not-a-jwt');
    // A badge (typ vc+jwt) is not an SVID.
    const metadata = await t.api().GET('/api/v1/identity/agents/{agentId}/client-metadata.json', { params: { path: { agentId: a.id } } });
    const badge = metadata.data!.badge;
    await bad(badge);
    // An SVID for another audience.
    await bad((await svidFor(t, acme.key, a.id, 'https://elsewhere.example')).svid);
    // Expired: the app's clock moved past its one second.
    const short = (await svidFor(t, acme.key, a.id, t.config.issuer, 1)).svid;
    clock.advance(2100);
    try {
      await bad(short);
    } finally {
      clock.advance(-2100);
    }
    // alg none, HS256, EdDSA.
    const claims = decodePart(svid, 1);
    const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    await bad(`${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims)}.`);
    await bad(`${enc({ alg: 'none', typ: 'JWT', kid: decodeProtectedHeader(svid).kid })}.${enc(claims)}.c2ln`);
    await bad(
      await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: decodeProtectedHeader(svid).kid })
        .sign(new Uint8Array(32)),
    );
    const ed = await generateKeyPair('EdDSA');
    await bad(
      await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', typ: 'JWT', kid: decodeProtectedHeader(svid).kid }).sign(ed.privateKey),
    );
    const ec = await generateKeyPair('ES256');
    await bad(
      await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: decodeProtectedHeader(svid).kid }).sign(ec.privateKey),
    );
    // Validly signed by the platform, but never issued (no record), or not naming an agent.
    const signed = await t.services.identity.ctx.tokens.sign({
      typ: 'JWT',
      sub: spiffe(acme.id, a.id),
      aud: t.config.issuer,
      lifetimeS: 60,
      payload: {},
    });
    await bad(signed.token);
    const notAgent = await t.services.identity.ctx.tokens.sign({
      typ: 'JWT',
      sub: 'spiffe://agentry.local/workload/x',
      aud: t.config.issuer,
      lifetimeS: 60,
      payload: {},
    });
    await bad(notAgent.token);
  });

  it('invalid_grant once the agent key behind the SVID is revoked', async () => {
    const agent = await t.agent(acme.key);
    const s = await svidFor(t, acme.key, agent.id);
    const kid = (await agentKid(agent.id))!;
    expect((await revokeKey(agent.id, kid)).response.status).toBe(204);
    expectOAuthError(await postToken(t, exchangeParams(s.svid, b.id, 'tools:x')), 400, 'invalid_grant');
  });

  it("invalid_grant when the SVID's agent was deleted", async () => {
    const agent = await t.agent(acme.key);
    const s = await svidFor(t, acme.key, agent.id);
    await t.api(acme.key).DELETE('/api/v1/agents/{id}', { params: { path: { id: agent.id } } });
    expectOAuthError(await postToken(t, exchangeParams(s.svid, b.id, 'tools:x')), 400, 'invalid_grant');
  });

  it("invalid_target for unknown agents, other tenants' agents and malformed audiences", async () => {
    const targets = [
      '01a00000-0000-7000-8000-000000000000',
      foreign.id,
      spiffe(globex.id, foreign.id),
      clientUrl(foreign.id),
      spiffe(globex.id, b.id), // right agent, wrong tenant in the ID
      `spiffe://other.domain/tenant/${acme.id}/agent/${b.id}`,
      `spiffe://Agentry.local/tenant/${acme.id}/agent/${b.id}`,
      `spiffe://agentry.local/tenant/${acme.id}/agent/${b.id}/`,
      `https://elsewhere.example/api/v1/identity/agents/${b.id}/client-metadata.json`,
      'two words',
    ];
    for (const audience of targets) expectOAuthError(await postToken(t, exchangeParams(svid, audience, 'tools:x')), 400, 'invalid_target');
    expectOAuthError(await postToken(t, exchangeParams(svid, [b.id, c.id], 'tools:x')), 400, 'invalid_target');
  });

  it('invalid_scope for scopes not of the tools: form', async () => {
    for (const scope of ['agents:read', 'tools:', 'tools', 'tools:x tools:', 'tools:bad!name', 'tools:**']) {
      expectOAuthError(await postToken(t, exchangeParams(svid, b.id, scope)), 400, 'invalid_scope');
    }
  });

  it('insufficient_scope for a tool that policy forbids', async () => {
    const api = t.api(acme.key);
    const policy = await api.POST('/api/v1/identity/tbac/policies', {
      body: { callerAgentId: a.id, calleeAgentId: c.id, toolName: 'delete_all', effect: 'deny' },
    });
    expect(policy.response.status).toBe(201);
    expectOAuthError(await postToken(t, exchangeParams(svid, c.id, 'tools:read tools:delete_all')), 400, 'insufficient_scope');
    expect((await postToken(t, exchangeParams(svid, c.id, 'tools:read'))).response.status).toBe(200);
    // tools:* is judged by wildcard-tool policies only; the specific deny applies when the tool is called.
    expect((await postToken(t, exchangeParams(svid, c.id, 'tools:*'))).response.status).toBe(200);

    // enforce mode: nothing without an allowing policy.
    expect((await api.PUT('/api/v1/identity/tbac/mode', { body: { mode: 'enforce' } })).response.status).toBe(200);
    try {
      expectOAuthError(await postToken(t, exchangeParams(svid, d.id, 'tools:read')), 400, 'insufficient_scope');
      await api.POST('/api/v1/identity/tbac/policies', { body: { callerAgentId: a.id, calleeAgentId: d.id, toolName: 'read' } });
      expect((await postToken(t, exchangeParams(svid, d.id, 'tools:read'))).response.status).toBe(200);
      expectOAuthError(await postToken(t, exchangeParams(svid, d.id, 'tools:read tools:write')), 400, 'insufficient_scope');
    } finally {
      await api.PUT('/api/v1/identity/tbac/mode', { body: { mode: 'audit' } });
    }
  });

  it('server_error (500) when the platform fails', async () => {
    const broken = await startApp();
    const tenant = await broken.tenant();
    const agent = await broken.agent(tenant.key);
    const other = await broken.agent(tenant.key);
    const s = await svidFor(broken, tenant.key, agent.id);
    // The token store is gone: verifying the SVID fails inside the platform.
    await sql`drop table identity_tokens`.execute(broken.db.kysely);
    expectOAuthError(await postToken(broken, exchangeParams(s.svid, other.id, 'tools:x')), 500, 'server_error');
    await broken.close();
  });
});

describe('configured ISSUER and TRUST_DOMAIN', () => {
  it('signs with the configured issuer, names agents in the configured trust domain, and accepts both SVID audiences', async () => {
    const other = await startApp({ ISSUER: 'https://issuer.example.com', TRUST_DOMAIN: 'prod.example' });
    try {
      const tenant = await other.tenant();
      const x = await other.agent(tenant.key);
      const y = await other.agent(tenant.key);
      const s1 = await svidFor(other, tenant.key, x.id, 'https://issuer.example.com');
      expect(s1.spiffeId).toBe(`spiffe://prod.example/tenant/${tenant.id}/agent/${x.id}`);
      expect(decodePart(s1.svid, 1).iss).toBe('https://issuer.example.com');
      const ex = await exchange(other, s1.svid, `spiffe://prod.example/tenant/${tenant.id}/agent/${y.id}`, 'tools:x');
      expect(decodePart(ex.access_token, 1)).toMatchObject({
        iss: 'https://issuer.example.com',
        aud: `spiffe://prod.example/tenant/${tenant.id}/agent/${y.id}`,
      });
      // The token endpoint URL lives under PUBLIC_BASE_URL, not the issuer.
      const s2 = await svidFor(other, tenant.key, x.id, 'http://agentry.test/api/v1/identity/oauth/token');
      await exchange(other, s2.svid, y.id, 'tools:x');
      // The default trust domain is not this installation's.
      expectOAuthError(
        await postToken(other, exchangeParams(s2.svid, `spiffe://agentry.local/tenant/${tenant.id}/agent/${y.id}`, 'tools:x')),
        400,
        'invalid_target',
      );
      // An SVID naming the old issuer is refused.
      const s3 = await svidFor(other, tenant.key, x.id, 'http://agentry.test');
      expectOAuthError(await postToken(other, exchangeParams(s3.svid, y.id, 'tools:x')), 400, 'invalid_grant');
    } finally {
      await other.close();
    }
  });
});

describe('introspection (RFC 7662)', () => {
  let svid: string;
  beforeAll(async () => {
    svid = (await svidFor(t, acme.key, a.id)).svid;
  });
  const introspect = (token: string | undefined, key: string | null = acme.key, extra: Record<string, string> = {}) =>
    t.api(key).POST('/api/v1/identity/oauth/introspect', { body: { token, ...extra }, headers: FORM, bodySerializer: form });

  it('answers active with the claims, form-encoded or JSON, never cached', async () => {
    const { access_token } = await exchange(t, svid, b.id, 'tools:x tools:y');
    const res = await introspect(access_token, acme.key, { token_type_hint: 'access_token' });
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get('cache-control')).toBe('no-store');
    const p = decodePart(access_token, 1);
    expect(res.data).toEqual({
      active: true,
      scope: 'tools:x tools:y',
      client_id: clientUrl(a.id),
      sub: spiffe(acme.id, a.id),
      aud: spiffe(acme.id, b.id),
      iss: t.config.issuer,
      exp: p.exp,
      iat: p.iat,
      jti: p.jti,
      token_type: 'Bearer',
      act: { sub: spiffe(acme.id, a.id) },
      tenant_id: acme.id,
    });
    const json = await t.api(acme.key).POST('/api/v1/identity/oauth/introspect', { body: { token: access_token } });
    expect(json.data).toEqual(res.data);
  });

  it('answers exactly {active:false} for garbage, tampered, SVIDs, foreign-tenant, expired and revoked tokens', async () => {
    const { access_token } = await exchange(t, svid, b.id, 'tools:x');
    const inactive = async (res: Awaited<ReturnType<typeof introspect>>) => {
      expect(res.response.status).toBe(200);
      expect(res.data).toEqual({ active: false });
    };
    await inactive(await introspect('garbage'));
    await inactive(await introspect(tamper(access_token)));
    await inactive(await introspect(svid));
    await inactive(await introspect(access_token, globex.key));

    clock.advance(3601 * 1000);
    try {
      await inactive(await introspect(access_token));
    } finally {
      clock.advance(-3601 * 1000);
    }
    expect((await introspect(access_token)).data!.active).toBe(true);
  });

  it('deactivates tokens down the chain when the agent key behind them is revoked', async () => {
    const agent = await t.agent(acme.key);
    const s = await svidFor(t, acme.key, agent.id);
    const svidB = await svidFor(t, acme.key, b.id);
    const t1 = await exchange(t, s.svid, b.id, 'tools:*');
    const t2 = await postToken(t, {
      ...exchangeParams(t1.access_token, c.id, 'tools:x'),
      subject_token_type: TT_ACCESS,
      actor_token: svidB.svid,
      actor_token_type: TT_JWT,
    });
    expect(t2.response.status).toBe(200);
    expect((await introspect(t1.access_token)).data!.active).toBe(true);
    expect((await introspect(t2.data!.access_token)).data!.active).toBe(true);
    await revokeKey(agent.id, (await agentKid(agent.id))!);
    expect((await introspect(t1.access_token)).data).toEqual({ active: false });
    expect((await introspect(t2.data!.access_token)).data).toEqual({ active: false });
  });

  it('accepts access tokens typed application/at+jwt (RFC 9068)', async () => {
    const identity = t.services.identity;
    const signed = await identity.ctx.tokens.sign({
      typ: 'application/at+jwt',
      sub: spiffe(acme.id, a.id),
      aud: spiffe(acme.id, b.id),
      lifetimeS: 300,
      payload: { client_id: clientUrl(a.id), scope: 'tools:x', act: { sub: spiffe(acme.id, a.id) }, tenant_id: acme.id },
    });
    const iso = (s: number) => new Date(s * 1000).toISOString();
    await t.db.kysely
      .insertInto('identity_tokens')
      .values({
        jti: signed.jti,
        tenant_id: acme.id,
        kind: 'exchange',
        agent_id: a.id,
        client_id: clientUrl(a.id),
        api_key_id: null,
        agent_key_id: null,
        parent_jti: null,
        issued_at: iso(signed.iat),
        expires_at: iso(signed.exp),
        revoked_at: null,
      })
      .execute();
    expect((await introspect(signed.token)).data).toMatchObject({ active: true, jti: signed.jti });
    const decision = await t.api().POST('/api/v1/identity/authorize', { body: { token: signed.token, tool: 'x', callee: b.id } });
    expect(decision.data).toEqual({ allowed: true, reason: 'no_policy_audit_allow' });
  });

  it('needs an authenticated caller with agents:read (RFC 6749 error bodies)', async () => {
    const { access_token } = await exchange(t, svid, b.id, 'tools:x');
    const anon = await introspect(access_token, null);
    expectOAuthError(anon, 401, 'invalid_client');
    expect(anon.response.headers.get('www-authenticate')).toBe('Bearer');
    const writer = await t.key(acme.key, ['settings:read']);
    expectOAuthError(await introspect(access_token, writer), 403, 'insufficient_scope');
    expectOAuthError(await introspect(undefined), 400, 'invalid_request');
  });
});
