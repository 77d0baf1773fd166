import { spawnSync } from 'node:child_process';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import { expect } from 'vitest';
import type { Response, TestApp } from '../helpers/app.js';

const GRANT_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const TT_JWT = 'urn:ietf:params:oauth:token-type:jwt';
export const TT_ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

export function form(params: Record<string, string | string[] | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) for (const value of v === undefined ? [] : [v].flat()) p.append(k, value);
  return p.toString();
}

/** POST to the token endpoint, form-encoded. */
export function tokenRequest(t: TestApp, params: Record<string, string | string[] | undefined>, headers: Record<string, string> = {}) {
  return t.request('POST', '/api/v1/identity/oauth/token', { payload: form(params), headers: { ...FORM, ...headers } });
}

export async function svidFor(
  t: TestApp,
  key: string,
  agentId: string,
  audience: string | string[] = t.config.issuer,
  ttlSeconds?: number,
) {
  const res = await t.request('POST', `/api/v1/identity/agents/${agentId}/svid`, {
    key,
    body: { audience, ...(ttlSeconds ? { ttlSeconds } : {}) },
  });
  expect(res.status, res.text).toBe(200);
  return res.body as { svid: string; spiffeId: string; expiresAt: string };
}

export function exchangeParams(svid: string, audience: string | string[], scope: string, extra: Record<string, string | string[]> = {}) {
  return { grant_type: GRANT_EXCHANGE, subject_token: svid, subject_token_type: TT_JWT, audience, scope, ...extra };
}

/** Exchanges an SVID for an access token and expects success. */
export async function exchange(t: TestApp, svid: string, audience: string | string[], scope: string) {
  const res = await tokenRequest(t, exchangeParams(svid, audience, scope));
  expect(res.status, res.text).toBe(200);
  return res.body as { access_token: string; scope: string; expires_in: number; issued_token_type: string; token_type: string };
}

export function expectOAuthError(res: Response, status: number, error: string) {
  const ok =
    res.status === status &&
    String(res.headers['content-type']).startsWith('application/json') &&
    res.body?.error === error &&
    typeof res.body?.error_description === 'string' &&
    // RFC 6749: printable ASCII except " and \.
    /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/.test(res.body.error_description) &&
    /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/.test(res.body.error) &&
    Object.keys(res.body).sort().join(',') === 'error,error_description' &&
    res.headers['cache-control'] === 'no-store' &&
    res.headers.pragma === 'no-cache';
  if (!ok) throw new Error(`expected OAuth error ${status} ${error}, got ${res.status} ${JSON.stringify(res.headers)} ${res.text}`);
}

export async function platformJwks(t: TestApp): Promise<JSONWebKeySet> {
  const res = await t.request('GET', '/api/v1/identity/.well-known/jwks.json');
  expect(res.status).toBe(200);
  return res.body;
}

/** The trust bundle turned into a jose key set: keep the jwt-svid keys and drop `use` (jose wants sig). */
export function bundleKeySet(bundle: { keys: Record<string, unknown>[] }) {
  return createLocalJWKSet({
    keys: bundle.keys.filter((k) => k.use === 'jwt-svid').map(({ use: _use, ...k }) => ({ ...k, alg: 'ES256' })) as JSONWebKeySet['keys'],
  });
}

/** Verifies a platform token with jose against the published platform JWKS. */
export async function joseVerify(t: TestApp, token: string, opts: { typ?: string; audience?: string } = {}) {
  const jwks = createLocalJWKSet(await platformJwks(t));
  return jwtVerify(token, jwks, { issuer: t.config.issuer, algorithms: ['ES256'], ...opts });
}

export const decodePart = (token: string, i: 0 | 1) =>
  JSON.parse(Buffer.from(token.split('.')[i], 'base64url').toString()) as Record<string, any>;

export const hasJwcrypto = spawnSync('/usr/bin/python3', ['-c', 'import jwcrypto'], { stdio: 'ignore' }).status === 0;
if (!hasJwcrypto) {
  process.stderr.write('identity tests: python3-jwcrypto is missing, so the independent (Python) verification is SKIPPED\n');
}

const PY_VERIFY = `
import json, sys
from jwcrypto import jwk, jwt, jws
data = json.load(sys.stdin)
keys = jwk.JWKSet.from_json(json.dumps(data["jwks"]))
try:
    tok = jwt.JWT(jwt=data["token"], key=keys, algs=["ES256"], check_claims={"exp": None, "iss": data["iss"]})
    out = {"ok": True, "header": json.loads(tok.header), "claims": json.loads(tok.claims)}
except Exception as e:
    out = {"ok": False, "error": type(e).__name__ + ": " + str(e)}
print(json.dumps(out))
`;

/** Independent verification with Python's jwcrypto (signature, alg ES256, exp, iss). */
export function pyVerify(
  jwks: JSONWebKeySet,
  token: string,
  iss: string,
): { ok: true; header: ProtectedHeaderParameters; claims: JWTPayload & Record<string, any> } | { ok: false; error: string } {
  const res = spawnSync('/usr/bin/python3', ['-c', PY_VERIFY], { input: JSON.stringify({ jwks, token, iss }), encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`python failed: ${res.stderr}`);
  return JSON.parse(res.stdout);
}

/** `tampered` flips one byte of the signature part. */
export function tamper(token: string): string {
  const [h, p, s] = token.split('.');
  const sig = Buffer.from(s, 'base64url');
  sig[10] ^= 0x01;
  return `${h}.${p}.${sig.toString('base64url')}`;
}
