import { compactVerify, createLocalJWKSet, decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { bundleKeySet, decodePart, hasJwcrypto, joseVerify, platformJwks, pyVerify, svidBody, svidFor } from './helpers.js';

let t: TestApp;
let acme: { id: string; key: string };
let globex: { id: string; key: string };
let agent: { id: string };
let peer: { id: string };

beforeAll(async () => {
  t = await startApp();
  acme = await t.tenant('acme');
  globex = await t.tenant('globex');
  peer = await t.agent(acme.key, { name: 'Peer' });
  agent = await t.agent(acme.key, {
    name: 'Support',
    tools: [
      { type: 'builtin', name: 'skills' },
      {
        type: 'mcp',
        url: 'https://mcp.internal.example/secret-path',
        headers: { authorization: 'Bearer s3cr3t-mcp-token' },
        name: 'crm',
        allowedTools: ['lookup'],
      },
      { type: 'agent', agentId: peer.id, name: 'ask_peer' },
    ],
  });
});
afterAll(() => t.close());

const metadataUrl = (id: string) => `${t.config.publicBaseUrl}/api/v1/identity/agents/${id}/client-metadata.json`;
const metadata = (agentId: string) =>
  t.api().GET('/api/v1/identity/agents/{agentId}/client-metadata.json', { params: { path: { agentId } } });
const agentJwks = (agentId: string) => t.api().GET('/api/v1/identity/agents/{agentId}/jwks.json', { params: { path: { agentId } } });
const trustBundle = () => t.api().GET('/.well-known/spiffe/trust-bundle');
/** The body's size in bytes, as the server sent it. */
const bytesOf = (response: Response) => {
  const bytes = Number(response.headers.get('content-length'));
  expect(bytes).toBeGreaterThan(0);
  return bytes;
};

describe('client metadata document (IETF Client ID Metadata Document)', () => {
  it('is public, names itself as client_id, points at the agent JWKS and stays under 5 KB with cache headers', async () => {
    const { data: doc, response } = await metadata(agent.id);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(bytesOf(response)).toBeLessThan(5 * 1024);
    expect(doc!.client_id).toBe(metadataUrl(agent.id));
    expect(doc!.jwks_uri).toBe(`${t.config.publicBaseUrl}/api/v1/identity/agents/${agent.id}/jwks.json`);
    expect(doc).not.toHaveProperty('jwks'); // never together with jwks_uri
    expect(doc!.token_endpoint_auth_method).toBe('private_key_jwt');
    expect(Object.keys(doc!).filter((k) => k.includes('secret'))).toEqual([]);
    expect(doc!.grant_types).toEqual(expect.arrayContaining(['urn:ietf:params:oauth:grant-type:token-exchange', 'client_credentials']));
    expect(doc!.spiffe_id).toBe(`spiffe://agentry.local/tenant/${acme.id}/agent/${agent.id}`);
    expect(typeof doc!.badge).toBe('string');
  });

  it('answers 404 problems for unknown agents, without credentials', async () => {
    expectProblem(await metadata('01a00000-0000-7000-8000-000000000000'), 404, 'not_found');
    expectProblem(await agentJwks('01a00000-0000-7000-8000-000000000000'), 404, 'not_found');
  });

  it('finds an agent of any tenant by its id alone', async () => {
    const other = await t.agent(globex.key, { name: 'Globex bot' });
    const res = await metadata(other.id);
    expect(res.response.status).toBe(200);
    expect(res.data!.spiffe_id).toBe(`spiffe://agentry.local/tenant/${globex.id}/agent/${other.id}`);
  });

  it('stays under 5 KB for an agent with the most tools allowed', async () => {
    const tools = Array.from({ length: 64 }, (_, i) => ({
      type: 'mcp' as const,
      url: `https://mcp${i}.example.com/x`,
      name: `srv${i}`.padEnd(32, 'x').slice(0, 32),
      allowedTools: Array.from({ length: 8 }, (_, j) => `tool_${j}_`.padEnd(60, 'y')),
    }));
    const big = await t.agent(acme.key, { name: 'n'.repeat(200), tools });
    const res = await metadata(big.id);
    expect(res.response.status).toBe(200);
    expect(bytesOf(res.response)).toBeLessThan(5 * 1024);
    const badge = decodePart(res.data!.badge, 1);
    expect(badge.credentialSubject.capabilities).toMatchObject({ toolSources: 64, truncated: true });
  });
});

describe('badge (W3C VC 2.0 secured with JOSE)', () => {
  it('is a vc+jwt whose payload is the credential, signed by the platform', async () => {
    const doc = (await metadata(agent.id)).data!;
    const header = decodeProtectedHeader(doc.badge);
    expect(header).toMatchObject({ alg: 'ES256', typ: 'vc+jwt', cty: 'vc' });
    expect(typeof header.kid).toBe('string');
    const { payload } = await joseVerify(t, doc.badge, { typ: 'vc+jwt' });
    expect(payload['@context']).toBeInstanceOf(Array);
    expect((payload['@context'] as string[])[0]).toBe('https://www.w3.org/ns/credentials/v2');
    expect(payload.type).toContain('VerifiableCredential');
    expect(payload.issuer).toBe(t.config.issuer);
    expect(payload.iss).toBe(payload.issuer);
    const subject = payload.credentialSubject as Record<string, unknown>;
    expect(subject.id).toBe(doc.spiffe_id);
    expect(payload.sub).toBe(subject.id);
    expect(payload).not.toHaveProperty('vc');
    expect(payload).not.toHaveProperty('vp');
    expect(Date.parse(payload.validFrom as string)).toBe((payload.iat as number) * 1000);
    expect(Date.parse(payload.validUntil as string)).toBe((payload.exp as number) * 1000);
    expect((payload.validUntil as string) > (payload.validFrom as string)).toBe(true);
  });

  it("describes the agent's tools without leaking MCP URLs or headers", async () => {
    const doc = (await metadata(agent.id)).data!;
    const subject = decodePart(doc.badge, 1).credentialSubject;
    expect(subject.capabilities.tools).toEqual([
      { type: 'builtin', name: 'skills', tools: ['skill_discover', 'skill_query', 'skill_request'] },
      { type: 'mcp', name: 'crm', tools: ['lookup'] },
      { type: 'agent', agentId: peer.id, name: 'ask_peer' },
    ]);
    expect(subject.capabilities.skills).toEqual([]);
    const text = Buffer.from(doc.badge.split('.')[1], 'base64url').toString();
    expect(text).not.toContain('mcp.internal.example');
    expect(text).not.toContain('s3cr3t');
  });

  it("follows changes of the agent's tools", async () => {
    const a = await t.agent(acme.key, { name: 'changing' });
    const before = decodePart((await metadata(a.id)).data!.badge, 1);
    expect(before.credentialSubject.capabilities.tools.map((x: { name: string }) => x.name)).toEqual(['skills', 'connectors']);
    await t
      .api(acme.key)
      .POST('/api/v1/agents/{id}', { params: { path: { id: a.id } }, body: { tools: [{ type: 'builtin', name: 'connectors' }] } });
    const after = decodePart((await metadata(a.id)).data!.badge, 1);
    expect(after.credentialSubject.capabilities.tools).toEqual([
      { type: 'builtin', name: 'connectors', tools: ['connector_discover', 'connector_request'] },
    ]);
  });

  it.skipIf(!hasJwcrypto)('verifies with Python jwcrypto too', async () => {
    const doc = (await metadata(agent.id)).data!;
    const out = pyVerify(await platformJwks(t), doc.badge, t.config.issuer);
    expect(out.ok, JSON.stringify(out)).toBe(true);
    if (out.ok) {
      expect(out.header.typ).toBe('vc+jwt'); // jwcrypto does not check typ
      expect(out.claims.credentialSubject.id).toBe(doc.spiffe_id);
    }
  });
});

describe('agent JWKS', () => {
  it("publishes the agent's EC P-256 public keys (created on first use), never private parts", async () => {
    const a = await t.agent(acme.key, { name: 'fresh' });
    const res = await agentJwks(a.id);
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    expect(res.data!.keys).toHaveLength(1);
    const [k] = res.data!.keys;
    expect(k).toEqual({
      kty: 'EC',
      crv: 'P-256',
      x: expect.any(String),
      y: expect.any(String),
      kid: expect.any(String),
      use: 'sig',
      alg: 'ES256',
    });
    await importJWK(k, 'ES256'); // a usable key
    // The same key comes back: creation happens once.
    const again = await agentJwks(a.id);
    expect(again.data!.keys.map((x) => x.kid)).toEqual([k.kid]);
  });

  it('creates exactly one key when many first uses race', async () => {
    const a = await t.agent(acme.key, { name: 'racy' });
    const results = await Promise.all(Array.from({ length: 8 }, () => agentJwks(a.id)));
    const kids = new Set(results.map((r) => r.data!.keys.map((k) => k.kid).join()));
    expect(kids.size).toBe(1);
    const rows = await t.db.kysely.selectFrom('identity_agent_keys').selectAll().where('agent_id', '=', a.id).execute();
    expect(rows).toHaveLength(1);
  });
});

describe('platform JWKS and SPIFFE trust bundle', () => {
  it('serves the platform JWKS, cacheable for one hour', async () => {
    const res = await t.api().GET('/api/v1/identity/.well-known/jwks.json');
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get('cache-control')).toBe('public, max-age=3600');
    expect(res.data!.keys.length).toBeGreaterThanOrEqual(1);
    for (const k of res.data!.keys) expect(k).toMatchObject({ kty: 'EC', crv: 'P-256', use: 'sig', alg: 'ES256', kid: expect.any(String) });
  });

  it('serves a trust bundle: jwt-svid keys with kid and no alg, a sequence and a 300 s refresh hint', async () => {
    const res = await trustBundle();
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get('content-type')).toMatch(/^application\/json/);
    const b = res.data!;
    expect(Array.isArray(b.keys)).toBe(true);
    expect(b.keys.length).toBeGreaterThanOrEqual(1);
    expect(Number.isInteger(b.spiffe_sequence)).toBe(true);
    expect(b.spiffe_refresh_hint).toBe(300);
    for (const k of b.keys) {
      expect(k.use).toBe('jwt-svid');
      expect(typeof k.kid).toBe('string');
      expect(k.kty).toBe('EC');
      expect(k).not.toHaveProperty('alg');
    }
    const platform = await platformJwks(t);
    expect(b.keys.map((k) => k.kid).sort()).toEqual(platform.keys.map((k) => k.kid).sort());
  });

  it('verifies an SVID with the bundle (keeping jwt-svid keys and dropping use, as jose requires)', async () => {
    const { svid, spiffeId } = await svidFor(t, acme.key, agent.id, 'https://verifier.example');
    const bundle = (await trustBundle()).data!;
    // jose's local key set would ignore keys whose use is not "sig":
    await expect(jwtVerify(svid, createLocalJWKSet({ keys: bundle.keys }))).rejects.toThrow();
    const { payload, protectedHeader } = await jwtVerify(svid, bundleKeySet(bundle), {
      issuer: t.config.issuer,
      audience: 'https://verifier.example',
    });
    expect(payload.sub).toBe(spiffeId);
    expect(protectedHeader.typ).toBe('JWT');
  });
});

describe('JWT-SVID issuance', () => {
  const svid = (key: string | null, body: ReturnType<typeof svidBody>) =>
    t.api(key).POST('/api/v1/identity/agents/{agentId}/svid', { params: { path: { agentId: agent.id } }, body });
  it('issues an SVID whose header holds only alg, kid and typ JWT, with sub, aud, exp, iat, jti', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { data, response } = await svid(acme.key, svidBody('spiffe://agentry.local/some/service'));
    expect(response.status).toBe(200);
    expect(Object.keys(data!).sort()).toEqual(['expiresAt', 'spiffeId', 'svid']);
    const header = decodePart(data!.svid, 0);
    expect(Object.keys(header).sort()).toEqual(['alg', 'kid', 'typ']);
    expect(header).toMatchObject({ alg: 'ES256', typ: 'JWT' });
    const { payload } = await joseVerify(t, data!.svid, { typ: 'JWT', audience: 'spiffe://agentry.local/some/service' });
    expect(payload.sub).toBe(data!.spiffeId);
    expect(payload.aud).toBe('spiffe://agentry.local/some/service'); // one value: a string
    expect(payload.iss).toBe(t.config.issuer);
    expect(typeof payload.jti).toBe('string');
    expect(payload.exp! - payload.iat!).toBe(3600);
    expect(payload.iat!).toBeGreaterThanOrEqual(before);
    expect(data!.expiresAt).toBe(new Date(payload.exp! * 1000).toISOString());
  });

  it('takes several audiences and a ttl up to 86400 s', async () => {
    const { svid } = await svidFor(t, acme.key, agent.id, ['a', 'b'], 86400);
    const p = decodePart(svid, 1);
    expect(p.aud).toEqual(['a', 'b']);
    expect(p.exp - p.iat).toBe(86400);
  });

  it('validates the body', async () => {
    // No audience at all: a body the types forbid, sent raw.
    expectProblem(await t.raw('POST', `/api/v1/identity/agents/${agent.id}/svid`, { key: acme.key, body: {} }), 400, 'validation_failed');
    expectProblem(await svid(acme.key, { audience: 'x', ttlSeconds: 86401 }), 400, 'validation_failed');
    expectProblem(await svid(acme.key, { audience: 'x', ttlSeconds: 0 }), 400, 'validation_failed');
    expectProblem(await svid(acme.key, svidBody([])), 400, 'validation_failed');
    expectProblem(await svid(acme.key, svidBody('')), 400, 'validation_failed');
  });

  it("needs agents:write and the agent in the caller's tenant", async () => {
    expectProblem(await svid(null, svidBody('x')), 401, 'missing_credentials');
    const reader = await t.api(acme.key).POST('/api/v1/api-keys', { body: { name: 'r', permissions: ['agents:read'] } });
    expectProblem(await svid(reader.data!.key, svidBody('x')), 403, 'forbidden');
    expectProblem(await svid(globex.key, svidBody('x')), 404, 'not_found');
  });

  it.skipIf(!hasJwcrypto)('verifies with Python jwcrypto', async () => {
    const { svid, spiffeId } = await svidFor(t, acme.key, agent.id, 'https://verifier.example');
    const jwks = await platformJwks(t);
    const out = pyVerify(jwks, svid, t.config.issuer);
    expect(out.ok, JSON.stringify(out)).toBe(true);
    if (out.ok) {
      expect(out.header).toEqual({ alg: 'ES256', kid: expect.any(String), typ: 'JWT' });
      expect(out.claims.sub).toBe(spiffeId);
    }
    const wrongIss = pyVerify(jwks, svid, 'https://someone-else.example');
    expect(wrongIss.ok).toBe(false);
  });

  it('signs with the key the JWKS publishes (raw compact verification)', async () => {
    const { svid } = await svidFor(t, acme.key, agent.id, 'x');
    const { kid } = decodeProtectedHeader(svid);
    const jwk = (await platformJwks(t)).keys.find((k) => k.kid === kid)!;
    await compactVerify(svid, await importJWK(jwk, 'ES256'));
  });
});
