import { SignJWT, decodeProtectedHeader, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { expectProblem, type Permission, startApp, type TestApp } from '../helpers/app.js';
import {
  ASSERTION_TYPE,
  decodePart,
  exchange,
  expectOAuthError,
  hasJwcrypto,
  joseVerify,
  platformJwks,
  postToken,
  pyVerify,
  svidFor,
  tamper,
} from './helpers.js';

let t: TestApp;
let acme: { id: string; key: string };
let globex: { id: string; key: string };

/** The app's clock: tokens expire by moving it. */
const clock = new ManualClock();

beforeAll(async () => {
  t = await startApp({}, { clock });
  acme = await t.tenant('acme');
  globex = await t.tenant('globex');
});
afterAll(() => t.close());

const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
const apiAudience = () => `${t.config.publicBaseUrl}/api/v1`;
const tokenEndpoint = () => `${t.config.publicBaseUrl}/api/v1/identity/oauth/token`;
const rotateKey = (agentId: string) =>
  t.api(acme.key).POST('/api/v1/identity/agents/{agentId}/keys/rotate', { params: { path: { agentId } } });

async function newKey(permissions: Permission[], owner = acme) {
  const { data, response } = await t.api(owner.key).POST('/api/v1/api-keys', { body: { name: 'cc', permissions } });
  expect(response.status).toBe(201);
  return { id: data!.apiKey.id, key: data!.key };
}
const revokeApiKey = (id: string) => t.api(acme.key).DELETE('/api/v1/api-keys/{id}', { params: { path: { id } } });
const agents = (key: string) => t.api(key).GET('/api/v1/agents');
const introspect = (token: string) => t.api(acme.key).POST('/api/v1/identity/oauth/introspect', { body: { token } });

describe('client_credentials with an API key', () => {
  it("issues an at+jwt with the key's permissions as scope (HTTP Basic)", async () => {
    const k = await newKey(['agents:read', 'settings:read']);
    const res = await postToken(t, { grant_type: 'client_credentials' }, basic(k.id, k.key));
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.response.headers.get('cache-control')).toBe('no-store');
    expect(res.response.headers.get('pragma')).toBe('no-cache');
    expect(res.data).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'agents:read settings:read',
    });
    expect(decodeProtectedHeader(res.data!.access_token)).toEqual({ alg: 'ES256', kid: expect.any(String), typ: 'at+jwt' });
    const { payload } = await joseVerify(t, res.data!.access_token, { typ: 'at+jwt', audience: apiAudience() });
    expect(payload).toMatchObject({
      iss: t.config.issuer,
      sub: k.id,
      client_id: k.id,
      aud: apiAudience(),
      scope: 'agents:read settings:read',
    });
    expect(payload).not.toHaveProperty('act');
    expect(typeof payload.jti).toBe('string');
    expect(payload.exp! - payload.iat!).toBe(3600);
  });

  it('accepts client_id and client_secret form fields, with the whole key or its secret part', async () => {
    const k = await newKey(['agents:read']);
    expect((await postToken(t, { grant_type: 'client_credentials', client_id: k.id, client_secret: k.key })).response.status).toBe(200);
    const secretPart = k.key.slice('agk_'.length + 32 + 1);
    expect((await postToken(t, { grant_type: 'client_credentials', client_id: k.id, client_secret: secretPart })).response.status).toBe(
      200,
    );
    // JSON works as well.
    const json = await t.api().POST('/api/v1/identity/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: k.id, client_secret: k.key },
    });
    expect(json.response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(json.response.status).toBe(200);
  });

  it('grants a requested subset, refuses more (insufficient_scope) and unknown scopes (invalid_scope)', async () => {
    const k = await newKey(['agents:read', 'agents:write']);
    const sub = await postToken(t, { grant_type: 'client_credentials', scope: 'agents:read' }, basic(k.id, k.key));
    expect(sub.data!.scope).toBe('agents:read');
    expectOAuthError(
      await postToken(t, { grant_type: 'client_credentials', scope: 'agents:read settings:write' }, basic(k.id, k.key)),
      400,
      'insufficient_scope',
    );
    expectOAuthError(await postToken(t, { grant_type: 'client_credentials', scope: 'tools:x' }, basic(k.id, k.key)), 400, 'invalid_scope');
  });

  it('refuses bad client authentication with 401 invalid_client', async () => {
    const k = await newKey(['agents:read']);
    const other = await newKey(['agents:read']);
    const wrongSecret = await postToken(t, { grant_type: 'client_credentials' }, basic(k.id, `${k.key.slice(0, -4)}AAAA`));
    expectOAuthError(wrongSecret, 401, 'invalid_client');
    expect(wrongSecret.response.headers.get('www-authenticate')).toMatch(/^Basic/);
    expectOAuthError(await postToken(t, { grant_type: 'client_credentials' }, basic(k.id, other.key)), 401, 'invalid_client'); // another key's secret
    expectOAuthError(
      await postToken(t, { grant_type: 'client_credentials', client_id: 'nope', client_secret: k.key }),
      401,
      'invalid_client',
    );
    expectOAuthError(await postToken(t, { grant_type: 'client_credentials' }), 401, 'invalid_client');
    expectOAuthError(await postToken(t, { grant_type: 'client_credentials' }, { authorization: 'Bearer x' }), 401, 'invalid_client');
    expectOAuthError(
      await postToken(t, { grant_type: 'client_credentials', client_id: k.id, client_secret: k.key }, basic(k.id, k.key)),
      400,
      'invalid_request',
    );
    await revokeApiKey(k.id);
    expectOAuthError(await postToken(t, { grant_type: 'client_credentials' }, basic(k.id, k.key)), 401, 'invalid_client');
  });

  it.skipIf(!hasJwcrypto)('issues tokens Python jwcrypto verifies', async () => {
    const k = await newKey(['agents:read']);
    const res = await postToken(t, { grant_type: 'client_credentials' }, basic(k.id, k.key));
    const out = pyVerify(await platformJwks(t), res.data!.access_token, t.config.issuer);
    expect(out.ok, JSON.stringify(out)).toBe(true);
    if (out.ok) expect(out.header.typ).toBe('at+jwt');
  });
});

describe('access tokens on the main API', () => {
  it("authenticate every endpoint like the API key, with the token's permissions", async () => {
    const k = await newKey(['agents:read', 'agents:write']);
    const token = (await postToken(t, { grant_type: 'client_credentials', scope: 'agents:read' }, basic(k.id, k.key))).data!.access_token;
    expect((await agents(token)).response.status).toBe(200);
    expectProblem(await t.api(token).POST('/api/v1/agents', { body: { name: 'x', appId: 'y' } }), 403, 'forbidden');
    const me = await t.api(token).GET('/api/v1/tenant');
    expect(me.data).toMatchObject({
      tenant: { id: acme.id },
      credential: { type: 'access_token', id: k.id, permissions: ['agents:read'] },
    });

    const writer = (await postToken(t, { grant_type: 'client_credentials' }, basic(k.id, k.key))).data!.access_token;
    const created = await t.api(writer).POST('/api/v1/agents', { body: { name: 'via token', appId: 'y' } });
    expect(created.response.status).toBe(201);
    const audit = await t.api(acme.key).GET('/api/v1/audit-events', { params: { query: { resourceId: created.data!.id } } });
    const events = audit.data!.events;
    expect(events[0]).toMatchObject({ action: 'agent.created', actorType: 'access_token', actorId: k.id });
    // Tenant scoping holds: another tenant's agent is not found.
    const foreign = await t.agent(globex.key);
    expectProblem(await t.api(writer).GET('/api/v1/agents/{id}', { params: { path: { id: foreign.id } } }), 404, 'not_found');
  });

  it('stop working when the API key is revoked', async () => {
    const k = await newKey(['agents:read']);
    const token = (await postToken(t, { grant_type: 'client_credentials' }, basic(k.id, k.key))).data!.access_token;
    expect((await agents(token)).response.status).toBe(200);
    expect((await revokeApiKey(k.id)).response.status).toBe(204);
    expectProblem(await agents(token), 401, 'invalid_credentials');
    expect((await introspect(token)).data).toEqual({ active: false });
  });

  it('refuses tampered, expired, delegation tokens and SVIDs', async () => {
    const k = await newKey(['agents:read']);
    const token = (await postToken(t, { grant_type: 'client_credentials' }, basic(k.id, k.key))).data!.access_token;
    expectProblem(await agents(tamper(token)), 401, 'invalid_credentials');
    clock.advance(3601 * 1000);
    try {
      expectProblem(await agents(token), 401, 'invalid_credentials');
    } finally {
      clock.advance(-3601 * 1000);
    }
    const a = await t.agent(acme.key);
    const b = await t.agent(acme.key);
    const s = await svidFor(t, acme.key, a.id);
    const delegation = await exchange(t, s.svid, b.id, 'tools:*');
    // A valid delegation token is refused with its own reason (it is for agent-to-agent calls).
    expectProblem(await agents(delegation.access_token), 401, 'delegation_token');
    expectProblem(await agents(s.svid), 401, 'invalid_credentials');
  });

  it('are introspectable with their permissions as scope', async () => {
    const k = await newKey(['agents:read']);
    const token = (await postToken(t, { grant_type: 'client_credentials' }, basic(k.id, k.key))).data!.access_token;
    const intro = await introspect(token);
    expect(intro.data).toMatchObject({ active: true, scope: 'agents:read', client_id: k.id, sub: k.id, aud: apiAudience() });
    expect(intro.data).not.toHaveProperty('act');
  });
});

describe('client_credentials for an agent (private_key_jwt)', () => {
  const assertionParams = (assertion: string, extra: Record<string, string> = {}) => ({
    grant_type: 'client_credentials',
    client_assertion_type: ASSERTION_TYPE,
    client_assertion: assertion,
    ...extra,
  });

  it('issues an API token (default scope agents:read) to an agent that signs with its own key', async () => {
    const a = await t.agent(acme.key);
    const assertion = await t.services.identity.signClientAssertion(acme.id, a.id);
    const res = await postToken(t, assertionParams(assertion));
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.scope).toBe('agents:read');
    const agentToken = res.data!.access_token;
    const p = decodePart(agentToken, 1);
    expect(p).toMatchObject({
      sub: `spiffe://agentry.local/tenant/${acme.id}/agent/${a.id}`,
      client_id: `${t.config.publicBaseUrl}/api/v1/identity/agents/${a.id}/client-metadata.json`,
      aud: apiAudience(),
    });
    // The token reaches that agent only (test/identity/agent-token-reach.test.ts walks every route).
    expect((await t.api(agentToken).GET('/api/v1/agents/{id}', { params: { path: { id: a.id } } })).response.status).toBe(200);
    expectProblem(await agents(agentToken), 403, 'forbidden');
    expectProblem(await t.api(agentToken).POST('/api/v1/agents', { body: { name: 'x', appId: 'y' } }), 403, 'forbidden');
    const me = (await t.api(agentToken).GET('/api/v1/tenant')).data!;
    expect(me.credential).toEqual({ type: 'access_token', id: a.id, permissions: ['agents:read'] });

    const skills = await postToken(
      t,
      assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id), { scope: 'agents:read skills:read' }),
    );
    expect(skills.data!.scope).toBe('agents:read skills:read');
    // agents:write lets it run itself (its token is bound to it); settings are never an agent's.
    expect(
      (await postToken(t, assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id), { scope: 'agents:write' })))
        .response.status,
    ).toBe(200);
    expectOAuthError(
      await postToken(t, assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id), { scope: 'settings:write' })),
      400,
      'insufficient_scope',
    );
  });

  it('accepts each assertion once, and only well-formed, fresh, correctly addressed and signed ones', async () => {
    const a = await t.agent(acme.key);
    const assertion = await t.services.identity.signClientAssertion(acme.id, a.id);
    expect((await postToken(t, assertionParams(assertion))).response.status).toBe(200);
    expectOAuthError(await postToken(t, assertionParams(assertion)), 401, 'invalid_client'); // replay
    expectOAuthError(
      await postToken(t, assertionParams(tamper(await t.services.identity.signClientAssertion(acme.id, a.id)))),
      401,
      'invalid_client',
    );
    expectOAuthError(
      await postToken(t, {
        ...assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id)),
        client_assertion_type: 'urn:x',
      }),
      400,
      'invalid_request',
    );

    const published = await t.api().GET('/api/v1/identity/agents/{agentId}/jwks.json', { params: { path: { agentId: a.id } } });
    const kid = published.data!.keys[0].kid;
    const clientId = `${t.config.publicBaseUrl}/api/v1/identity/agents/${a.id}/client-metadata.json`;
    const now = Math.floor(Date.now() / 1000);
    const forge = async (key: CryptoKey | Uint8Array, claims: Record<string, unknown>, header: Record<string, unknown> = {}) =>
      new SignJWT({ jti: crypto.randomUUID(), ...claims })
        .setProtectedHeader({ alg: 'ES256', kid, ...header })
        .setIssuedAt(now)
        .setExpirationTime((claims.exp as number) ?? now + 60)
        .sign(key);
    const stranger = (await generateKeyPair('ES256')).privateKey;
    const base = { iss: clientId, sub: clientId, aud: tokenEndpoint() };
    expectOAuthError(await postToken(t, assertionParams(await forge(stranger, base))), 401, 'invalid_client'); // not the agent's key

    // With the agent's real key (what the runtime would hold): wrong aud, sub, expiry, lifetime.
    const real = await t.services.identity.agentKeys.signingKey(acme.id, a.id);
    expect((await postToken(t, assertionParams(await forge(real.key, base)))).response.status).toBe(200);
    expect((await postToken(t, assertionParams(await forge(real.key, { ...base, aud: t.config.issuer })))).response.status).toBe(200);
    expectOAuthError(
      await postToken(t, assertionParams(await forge(real.key, { ...base, aud: 'https://elsewhere.example' }))),
      401,
      'invalid_client',
    );
    expectOAuthError(await postToken(t, assertionParams(await forge(real.key, { ...base, sub: 'someone-else' }))), 401, 'invalid_client');
    expectOAuthError(await postToken(t, assertionParams(await forge(real.key, { ...base, exp: now - 10 }))), 401, 'invalid_client');
    expectOAuthError(await postToken(t, assertionParams(await forge(real.key, { ...base, exp: now + 7200 }))), 401, 'invalid_client');
    expectOAuthError(await postToken(t, assertionParams(await forge(real.key, base, { typ: 'at+jwt' }))), 401, 'invalid_client');
    // A different agent's identity claimed with this agent's key.
    const b = await t.agent(acme.key);
    const bId = `${t.config.publicBaseUrl}/api/v1/identity/agents/${b.id}/client-metadata.json`;
    expectOAuthError(await postToken(t, assertionParams(await forge(real.key, { ...base, iss: bId, sub: bId }))), 401, 'invalid_client');
  });

  it('keeps accepting a rotated key during its grace period; a revoked key and its tokens stop at once', async () => {
    const a = await t.agent(acme.key);
    const old = await t.services.identity.agentKeys.signingKey(acme.id, a.id);
    const oldAssertion = await t.services.identity.signClientAssertion(acme.id, a.id);
    const token = (await postToken(t, assertionParams(oldAssertion))).data!.access_token;
    expect((await rotateKey(a.id)).response.status).toBe(201);
    const clientId = `${t.config.publicBaseUrl}/api/v1/identity/agents/${a.id}/client-metadata.json`;
    const signedByOld = await new SignJWT({ jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: old.kid })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(tokenEndpoint())
      .setExpirationTime('1m')
      .sign(old.key);
    expect((await postToken(t, assertionParams(signedByOld))).response.status).toBe(200);
    const self = () => t.api(token).GET('/api/v1/agents/{id}', { params: { path: { id: a.id } } });
    expect((await self()).response.status).toBe(200);

    const revoked = await t.api(acme.key).DELETE('/api/v1/identity/agents/{agentId}/keys/{keyId}', {
      params: { path: { agentId: a.id, keyId: old.kid } },
    });
    expect(revoked.response.status).toBe(204);
    expectProblem(await self(), 401, 'invalid_credentials');
    const again = await new SignJWT({ jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: old.kid })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(tokenEndpoint())
      .setExpirationTime('1m')
      .sign(old.key);
    expectOAuthError(await postToken(t, assertionParams(again)), 401, 'invalid_client');
    // The new key works.
    expect((await postToken(t, assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id)))).response.status).toBe(200);
  });

  it('lets an externally hosted agent authenticate with the private key it received on rotation', async () => {
    const ext = await t.agent(acme.key, { hosting: 'external' });
    const rotated = await rotateKey(ext.id);
    const jwk = rotated.data!.privateJwk as JWK;
    const key = await importJWK(jwk, 'ES256');
    const spiffeId = `spiffe://agentry.local/tenant/${acme.id}/agent/${ext.id}`; // the SPIFFE ID works as client id too
    const assertion = await new SignJWT({ jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: jwk.kid! })
      .setIssuer(spiffeId)
      .setSubject(spiffeId)
      .setAudience(tokenEndpoint())
      .setExpirationTime('2m')
      .sign(key);
    const res = await postToken(t, assertionParams(assertion));
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  });
});
