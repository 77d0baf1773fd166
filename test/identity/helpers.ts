import { spawnSync } from 'node:child_process';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import { expect } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import type { ApiResult, Response, TestApp } from '../helpers/app.js';

const GRANT_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const TT_JWT = 'urn:ietf:params:oauth:token-type:jwt';
export const TT_ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

type TokenParams = NonNullable<
  paths['/api/v1/identity/oauth/token']['post']['requestBody']
>['content']['application/x-www-form-urlencoded'];

/** Form-encodes `params`; a list repeats its parameter (audience and resource may come more than once). */
export function form(params: Record<string, unknown>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) for (const value of v === undefined ? [] : [v].flat()) p.append(k, String(value));
  return p.toString();
}

/** POST to the token endpoint through the typed client, form-encoded. */
export function postToken(t: Pick<TestApp, 'api'>, params: TokenParams, headers: Record<string, string> = {}) {
  return t.api().POST('/api/v1/identity/oauth/token', { body: params, headers: { ...FORM, ...headers }, bodySerializer: form });
}

/** POST to the token endpoint raw: only for what `postToken` cannot send (no grant_type, a parameter given twice). */
export function tokenRequest(t: TestApp, params: Record<string, string | string[] | undefined>, headers: Record<string, string> = {}) {
  return t.raw('POST', '/api/v1/identity/oauth/token', { payload: form(params), headers: { ...FORM, ...headers } });
}

type SvidInput = NonNullable<paths['/api/v1/identity/agents/{agentId}/svid']['post']['requestBody']>['content']['application/json'];

/**
 * An SVID request's body. The generated type makes ttlSeconds required because it has a default
 * (openapi-typescript turns defaults into required fields, request bodies included); left out, the
 * server's default applies.
 */
export const svidBody = (audience: string | string[], ttlSeconds?: number) =>
  ({ audience, ...(ttlSeconds === undefined ? {} : { ttlSeconds }) }) as SvidInput;

export async function svidFor(
  t: TestApp,
  key: string,
  agentId: string,
  audience: string | string[] = t.config.issuer,
  ttlSeconds?: number,
) {
  const { data, error, response } = await t.api(key).POST('/api/v1/identity/agents/{agentId}/svid', {
    params: { path: { agentId } },
    body: svidBody(audience, ttlSeconds),
  });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!;
}

export function exchangeParams(svid: string, audience: string | string[], scope: string, extra: Record<string, string | string[]> = {}) {
  return { grant_type: GRANT_EXCHANGE, subject_token: svid, subject_token_type: TT_JWT, audience, scope, ...extra };
}

/** Exchanges an SVID for an access token and expects success. */
export async function exchange(t: TestApp, svid: string, audience: string | string[], scope: string) {
  const { data, error, response } = await postToken(t, exchangeParams(svid, audience, scope));
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!;
}

/** Asserts an RFC 6749 error answer (a raw response or the typed client's result). */
export function expectOAuthError(res: Response | ApiResult, status: number, error: string) {
  const [actualStatus, headers, body, text] =
    'response' in res
      ? [res.response.status, Object.fromEntries(res.response.headers), res.error as any, JSON.stringify(res.error ?? res.data)]
      : [res.status, res.headers, res.body, res.text];
  const ok =
    actualStatus === status &&
    String(headers['content-type']).startsWith('application/json') &&
    body?.error === error &&
    typeof body?.error_description === 'string' &&
    // RFC 6749: printable ASCII except " and \.
    /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/.test(body.error_description) &&
    /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/.test(body.error) &&
    Object.keys(body).sort().join(',') === 'error,error_description' &&
    headers['cache-control'] === 'no-store' &&
    headers.pragma === 'no-cache';
  if (!ok) throw new Error(`expected OAuth error ${status} ${error}, got ${actualStatus} ${JSON.stringify(headers)} ${text}`);
}

export async function platformJwks(t: TestApp): Promise<JSONWebKeySet> {
  const { data, response } = await t.api().GET('/api/v1/identity/.well-known/jwks.json');
  expect(response.status).toBe(200);
  return data!;
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
