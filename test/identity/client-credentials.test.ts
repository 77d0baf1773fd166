import { SignJWT, decodeProtectedHeader, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import {
  ASSERTION_TYPE,
  decodePart,
  exchange,
  expectOAuthError,
  hasJwcrypto,
  joseVerify,
  platformJwks,
  pyVerify,
  svidFor,
  tamper,
  tokenRequest,
} from './helpers.js';

let t: TestApp;
let acme: { id: string; key: string };
let globex: { id: string; key: string };

beforeAll(async () => {
  t = await startApp();
  acme = await t.tenant('acme');
  globex = await t.tenant('globex');
});
afterAll(() => t.close());

const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
const apiAudience = () => `${t.config.publicBaseUrl}/api/v1`;
const tokenEndpoint = () => `${t.config.publicBaseUrl}/api/v1/identity/oauth/token`;

async function newKey(permissions: string[], owner = acme) {
  const res = await t.request('POST', '/api/v1/api-keys', { key: owner.key, body: { name: 'cc', permissions } });
  expect(res.status).toBe(201);
  return { id: res.body.apiKey.id as string, key: res.body.key as string };
}

describe('client_credentials with an API key', () => {
  it("issues an at+jwt with the key's permissions as scope (HTTP Basic)", async () => {
    const k = await newKey(['agents:read', 'settings:read']);
    const res = await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, k.key));
    expect(res.status, res.text).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    expect(res.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'agents:read settings:read',
    });
    expect(decodeProtectedHeader(res.body.access_token)).toEqual({ alg: 'ES256', kid: expect.any(String), typ: 'at+jwt' });
    const { payload } = await joseVerify(t, res.body.access_token, { typ: 'at+jwt', audience: apiAudience() });
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
    expect((await tokenRequest(t, { grant_type: 'client_credentials', client_id: k.id, client_secret: k.key })).status).toBe(200);
    const secretPart = k.key.slice('agk_'.length + 32 + 1);
    expect((await tokenRequest(t, { grant_type: 'client_credentials', client_id: k.id, client_secret: secretPart })).status).toBe(200);
    // JSON works as well.
    const json = await t.request('POST', '/api/v1/identity/oauth/token', {
      body: { grant_type: 'client_credentials', client_id: k.id, client_secret: k.key },
    });
    expect(json.status).toBe(200);
  });

  it('grants a requested subset, refuses more (insufficient_scope) and unknown scopes (invalid_scope)', async () => {
    const k = await newKey(['agents:read', 'agents:write']);
    const sub = await tokenRequest(t, { grant_type: 'client_credentials', scope: 'agents:read' }, basic(k.id, k.key));
    expect(sub.body.scope).toBe('agents:read');
    expectOAuthError(
      await tokenRequest(t, { grant_type: 'client_credentials', scope: 'agents:read settings:write' }, basic(k.id, k.key)),
      400,
      'insufficient_scope',
    );
    expectOAuthError(
      await tokenRequest(t, { grant_type: 'client_credentials', scope: 'tools:x' }, basic(k.id, k.key)),
      400,
      'invalid_scope',
    );
  });

  it('refuses bad client authentication with 401 invalid_client', async () => {
    const k = await newKey(['agents:read']);
    const other = await newKey(['agents:read']);
    const wrongSecret = await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, `${k.key.slice(0, -4)}AAAA`));
    expectOAuthError(wrongSecret, 401, 'invalid_client');
    expect(wrongSecret.headers['www-authenticate']).toMatch(/^Basic/);
    expectOAuthError(await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, other.key)), 401, 'invalid_client'); // another key's secret
    expectOAuthError(
      await tokenRequest(t, { grant_type: 'client_credentials', client_id: 'nope', client_secret: k.key }),
      401,
      'invalid_client',
    );
    expectOAuthError(await tokenRequest(t, { grant_type: 'client_credentials' }), 401, 'invalid_client');
    expectOAuthError(await tokenRequest(t, { grant_type: 'client_credentials' }, { authorization: 'Bearer x' }), 401, 'invalid_client');
    expectOAuthError(
      await tokenRequest(t, { grant_type: 'client_credentials', client_id: k.id, client_secret: k.key }, basic(k.id, k.key)),
      400,
      'invalid_request',
    );
    await t.request('DELETE', `/api/v1/api-keys/${k.id}`, { key: acme.key });
    expectOAuthError(await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, k.key)), 401, 'invalid_client');
  });

  it.skipIf(!hasJwcrypto)('issues tokens Python jwcrypto verifies', async () => {
    const k = await newKey(['agents:read']);
    const res = await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, k.key));
    const out = pyVerify(await platformJwks(t), res.body.access_token, t.config.issuer);
    expect(out.ok, JSON.stringify(out)).toBe(true);
    if (out.ok) expect(out.header.typ).toBe('at+jwt');
  });
});

describe('access tokens on the main API', () => {
  it("authenticate every endpoint like the API key, with the token's permissions", async () => {
    const k = await newKey(['agents:read', 'agents:write']);
    const token = (await tokenRequest(t, { grant_type: 'client_credentials', scope: 'agents:read' }, basic(k.id, k.key))).body.access_token;
    expect((await t.request('GET', '/api/v1/agents', { key: token })).status).toBe(200);
    expectProblem(await t.request('POST', '/api/v1/agents', { key: token, body: { name: 'x', appId: 'y' } }), 403, 'forbidden');
    const me = await t.request('GET', '/api/v1/tenant', { key: token });
    expect(me.body).toMatchObject({
      tenant: { id: acme.id },
      credential: { type: 'access_token', id: k.id, permissions: ['agents:read'] },
    });

    const writer = (await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, k.key))).body.access_token;
    const created = await t.request('POST', '/api/v1/agents', { key: writer, body: { name: 'via token', appId: 'y' } });
    expect(created.status).toBe(201);
    const events = (await t.request('GET', `/api/v1/audit-events?resourceId=${created.body.id}`, { key: acme.key })).body.events;
    expect(events[0]).toMatchObject({ action: 'agent.created', actorType: 'access_token', actorId: k.id });
    // Tenant scoping holds: another tenant's agent is not found.
    const foreign = await t.agent(globex.key);
    expectProblem(await t.request('GET', `/api/v1/agents/${foreign.id}`, { key: writer }), 404, 'not_found');
  });

  it('stop working when the API key is revoked', async () => {
    const k = await newKey(['agents:read']);
    const token = (await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, k.key))).body.access_token;
    expect((await t.request('GET', '/api/v1/agents', { key: token })).status).toBe(200);
    expect((await t.request('DELETE', `/api/v1/api-keys/${k.id}`, { key: acme.key })).status).toBe(204);
    expectProblem(await t.request('GET', '/api/v1/agents', { key: token }), 401, 'invalid_credentials');
    const intro = await t.request('POST', '/api/v1/identity/oauth/introspect', { key: acme.key, body: { token } });
    expect(intro.body).toEqual({ active: false });
  });

  it('refuses tampered, expired, delegation tokens and SVIDs', async () => {
    const k = await newKey(['agents:read']);
    const token = (await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, k.key))).body.access_token;
    expectProblem(await t.request('GET', '/api/v1/agents', { key: tamper(token) }), 401, 'invalid_credentials');
    const clock = t.services.identity.clock;
    const real = clock.now;
    clock.now = () => Date.now() + 3601 * 1000;
    try {
      expectProblem(await t.request('GET', '/api/v1/agents', { key: token }), 401, 'invalid_credentials');
    } finally {
      clock.now = real;
    }
    const a = await t.agent(acme.key);
    const b = await t.agent(acme.key);
    const s = await svidFor(t, acme.key, a.id);
    const delegation = await exchange(t, s.svid, b.id, 'tools:*');
    // A valid delegation token is refused with its own reason (it is for agent-to-agent calls).
    expectProblem(await t.request('GET', '/api/v1/agents', { key: delegation.access_token }), 401, 'delegation_token');
    expectProblem(await t.request('GET', '/api/v1/agents', { key: s.svid }), 401, 'invalid_credentials');
  });

  it('are introspectable with their permissions as scope', async () => {
    const k = await newKey(['agents:read']);
    const token = (await tokenRequest(t, { grant_type: 'client_credentials' }, basic(k.id, k.key))).body.access_token;
    const intro = await t.request('POST', '/api/v1/identity/oauth/introspect', { key: acme.key, body: { token } });
    expect(intro.body).toMatchObject({ active: true, scope: 'agents:read', client_id: k.id, sub: k.id, aud: apiAudience() });
    expect(intro.body).not.toHaveProperty('act');
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
    const res = await tokenRequest(t, assertionParams(assertion));
    expect(res.status, res.text).toBe(200);
    expect(res.body.scope).toBe('agents:read');
    const p = decodePart(res.body.access_token, 1);
    expect(p).toMatchObject({
      sub: `spiffe://agentry.local/tenant/${acme.id}/agent/${a.id}`,
      client_id: `${t.config.publicBaseUrl}/api/v1/identity/agents/${a.id}/client-metadata.json`,
      aud: apiAudience(),
    });
    // The token reaches that agent only (test/identity/agent-token-reach.test.ts walks every route).
    expect((await t.request('GET', `/api/v1/agents/${a.id}`, { key: res.body.access_token })).status).toBe(200);
    expectProblem(await t.request('GET', '/api/v1/agents', { key: res.body.access_token }), 403, 'forbidden');
    expectProblem(
      await t.request('POST', '/api/v1/agents', { key: res.body.access_token, body: { name: 'x', appId: 'y' } }),
      403,
      'forbidden',
    );
    const me = (await t.request('GET', '/api/v1/tenant', { key: res.body.access_token })).body;
    expect(me.credential).toEqual({ type: 'access_token', id: a.id, permissions: ['agents:read'] });

    const skills = await tokenRequest(
      t,
      assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id), { scope: 'agents:read skills:read' }),
    );
    expect(skills.body.scope).toBe('agents:read skills:read');
    // agents:write lets it run itself (its token is bound to it); settings are never an agent's.
    expect(
      (await tokenRequest(t, assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id), { scope: 'agents:write' })))
        .status,
    ).toBe(200);
    expectOAuthError(
      await tokenRequest(t, assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id), { scope: 'settings:write' })),
      400,
      'insufficient_scope',
    );
  });

  it('accepts each assertion once, and only well-formed, fresh, correctly addressed and signed ones', async () => {
    const a = await t.agent(acme.key);
    const assertion = await t.services.identity.signClientAssertion(acme.id, a.id);
    expect((await tokenRequest(t, assertionParams(assertion))).status).toBe(200);
    expectOAuthError(await tokenRequest(t, assertionParams(assertion)), 401, 'invalid_client'); // replay
    expectOAuthError(
      await tokenRequest(t, assertionParams(tamper(await t.services.identity.signClientAssertion(acme.id, a.id)))),
      401,
      'invalid_client',
    );
    expectOAuthError(
      await tokenRequest(t, {
        ...assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id)),
        client_assertion_type: 'urn:x',
      }),
      400,
      'invalid_request',
    );

    const kid = (await t.request('GET', `/api/v1/identity/agents/${a.id}/jwks.json`)).body.keys[0].kid;
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
    expectOAuthError(await tokenRequest(t, assertionParams(await forge(stranger, base))), 401, 'invalid_client'); // not the agent's key

    // With the agent's real key (what the runtime would hold): wrong aud, sub, expiry, lifetime.
    const real = await t.services.identity.agentKeys.signingKey(acme.id, a.id);
    expect((await tokenRequest(t, assertionParams(await forge(real.key, base)))).status).toBe(200);
    expect((await tokenRequest(t, assertionParams(await forge(real.key, { ...base, aud: t.config.issuer })))).status).toBe(200);
    expectOAuthError(
      await tokenRequest(t, assertionParams(await forge(real.key, { ...base, aud: 'https://elsewhere.example' }))),
      401,
      'invalid_client',
    );
    expectOAuthError(
      await tokenRequest(t, assertionParams(await forge(real.key, { ...base, sub: 'someone-else' }))),
      401,
      'invalid_client',
    );
    expectOAuthError(await tokenRequest(t, assertionParams(await forge(real.key, { ...base, exp: now - 10 }))), 401, 'invalid_client');
    expectOAuthError(await tokenRequest(t, assertionParams(await forge(real.key, { ...base, exp: now + 7200 }))), 401, 'invalid_client');
    expectOAuthError(await tokenRequest(t, assertionParams(await forge(real.key, base, { typ: 'at+jwt' }))), 401, 'invalid_client');
    // A different agent's identity claimed with this agent's key.
    const b = await t.agent(acme.key);
    const bId = `${t.config.publicBaseUrl}/api/v1/identity/agents/${b.id}/client-metadata.json`;
    expectOAuthError(await tokenRequest(t, assertionParams(await forge(real.key, { ...base, iss: bId, sub: bId }))), 401, 'invalid_client');
  });

  it('keeps accepting a rotated key during its grace period; a revoked key and its tokens stop at once', async () => {
    const a = await t.agent(acme.key);
    const old = await t.services.identity.agentKeys.signingKey(acme.id, a.id);
    const oldAssertion = await t.services.identity.signClientAssertion(acme.id, a.id);
    const token = (await tokenRequest(t, assertionParams(oldAssertion))).body.access_token;
    expect((await t.request('POST', `/api/v1/identity/agents/${a.id}/keys/rotate`, { key: acme.key })).status).toBe(201);
    const clientId = `${t.config.publicBaseUrl}/api/v1/identity/agents/${a.id}/client-metadata.json`;
    const signedByOld = await new SignJWT({ jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: old.kid })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(tokenEndpoint())
      .setExpirationTime('1m')
      .sign(old.key);
    expect((await tokenRequest(t, assertionParams(signedByOld))).status).toBe(200);
    expect((await t.request('GET', `/api/v1/agents/${a.id}`, { key: token })).status).toBe(200);

    expect((await t.request('DELETE', `/api/v1/identity/agents/${a.id}/keys/${old.kid}`, { key: acme.key })).status).toBe(204);
    expectProblem(await t.request('GET', `/api/v1/agents/${a.id}`, { key: token }), 401, 'invalid_credentials');
    const again = await new SignJWT({ jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: old.kid })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(tokenEndpoint())
      .setExpirationTime('1m')
      .sign(old.key);
    expectOAuthError(await tokenRequest(t, assertionParams(again)), 401, 'invalid_client');
    // The new key works.
    expect((await tokenRequest(t, assertionParams(await t.services.identity.signClientAssertion(acme.id, a.id)))).status).toBe(200);
  });

  it('lets an externally hosted agent authenticate with the private key it received on rotation', async () => {
    const ext = await t.agent(acme.key, { hosting: 'external' });
    const rotated = await t.request('POST', `/api/v1/identity/agents/${ext.id}/keys/rotate`, { key: acme.key });
    const jwk = rotated.body.privateJwk as JWK;
    const key = await importJWK(jwk, 'ES256');
    const spiffeId = `spiffe://agentry.local/tenant/${acme.id}/agent/${ext.id}`; // the SPIFFE ID works as client id too
    const assertion = await new SignJWT({ jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: jwk.kid! })
      .setIssuer(spiffeId)
      .setSubject(spiffeId)
      .setAudience(tokenEndpoint())
      .setExpirationTime('2m')
      .sign(key);
    const res = await tokenRequest(t, assertionParams(assertion));
    expect(res.status, res.text).toBe(200);
  });
});
