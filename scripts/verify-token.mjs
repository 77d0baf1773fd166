#!/usr/bin/env node
// Verifies a token issued by an Agentry server the way any external party can (spec 4.5,
// "External verification of issued tokens"), with nothing but the public trust bundle and `jose`:
//   1. fetch the trust bundle from GET /.well-known/spiffe/trust-bundle;
//   2. verify the JWT signature (ES256) against its keys;
//   3. read the typ header to find the token type (JWT: SVID, vc+jwt: badge, at+jwt: access token);
//   4. check that iss equals the issuer and exp has not passed;
//   5. check that the verifier's own identity is in aud (badges carry no aud: skipped for them).
//
// usage: node scripts/verify-token.mjs --base <server URL> [--issuer <iss>] [--audience <my identity>] <token | ->
//   --issuer defaults to --base (the server's default ISSUER is its PUBLIC_BASE_URL);
//   --audience is required for SVIDs and access tokens; "-" reads the token from stdin.
// Prints one JSON object; exit status 0 when the token is valid, 1 when it is not, 2 on usage errors.
import { parseArgs } from 'node:util';
import { createLocalJWKSet, decodeProtectedHeader, errors, jwtVerify } from 'jose';

const TYPES = { jwt: 'svid', 'vc+jwt': 'badge', 'at+jwt': 'access_token' };

function fail(step, error, extra = {}) {
  process.stdout.write(`${JSON.stringify({ valid: false, step, error, ...extra })}\n`);
  process.exit(1);
}

async function readStdin() {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.trim();
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { base: { type: 'string' }, issuer: { type: 'string' }, audience: { type: 'string' } },
});
if (!values.base || positionals.length !== 1) {
  process.stderr.write(
    'usage: node scripts/verify-token.mjs --base <server URL> [--issuer <iss>] [--audience <my identity>] <token | ->\n',
  );
  process.exit(2);
}
const base = values.base.replace(/\/+$/, '');
const issuer = (values.issuer ?? base).replace(/\/+$/, '');
const token = positionals[0] === '-' ? await readStdin() : positionals[0];

// 1. The trust bundle.
/** @type {{ keys?: ({ use?: string } & Record<string, unknown>)[], spiffe_sequence?: number }} */
let bundle;
try {
  const res = await fetch(`${base}/.well-known/spiffe/trust-bundle`);
  if (!res.ok) fail(1, `trust bundle: HTTP ${res.status}`);
  bundle = await res.json();
} catch (err) {
  fail(1, `trust bundle: ${err.message}`);
}
if (!Array.isArray(bundle.keys)) fail(1, 'trust bundle has no keys');
// jose's key set only takes keys meant for signatures: keep the jwt-svid keys, drop `use`.
const keys = bundle.keys.filter((k) => k.use === 'jwt-svid').map(({ use, ...k }) => ({ ...k, alg: 'ES256' }));
const keySet = createLocalJWKSet({ keys });

// 3 (read first, to know what the token is; checked against the signature in step 2).
let header;
try {
  header = decodeProtectedHeader(token);
} catch {
  fail(3, 'not a JWT');
}
const typ = typeof header.typ === 'string' ? header.typ.toLowerCase().replace(/^application\//, '') : 'jwt';
const type = TYPES[typ];
if (!type) fail(3, `unknown token type (typ ${header.typ})`);
if (type !== 'badge' && !values.audience) {
  process.stderr.write('--audience (your own identity) is required to verify an SVID or access token\n');
  process.exit(2);
}

// 2 + 4 + 5: signature, then iss and exp, then aud.
let payload;
try {
  ({ payload } = await jwtVerify(token, keySet, {
    algorithms: ['ES256'],
    issuer,
    audience: type === 'badge' ? undefined : values.audience,
    requiredClaims: ['exp'],
  }));
} catch (err) {
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWSSignatureVerificationFailed)
    fail(2, 'the signature does not verify against the trust bundle');
  if (err instanceof errors.JWTExpired) fail(4, 'the token has expired');
  if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'iss') fail(4, `iss is not ${issuer}`);
  if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'aud') fail(5, `${values.audience} is not in aud`);
  fail(2, err.message);
}

process.stdout.write(`${JSON.stringify({ valid: true, type, header, claims: payload, trustBundleSequence: bundle.spiffe_sequence })}\n`);
