import { recordAudit, type AuditInput } from '../tenancy/audit.js';
import type { AccessClaims, AccessTokenKind, Act, TokenState, VerifiedToken } from './claims.js';
import type { IdentityContext } from './context.js';
import { iso } from './key-material.js';
import { namedAgents } from './standing.js';
import * as store from './store.js';
import { TYP, TokenError } from './tokens.js';

/**
 * RFC 9068 access tokens (`typ: at+jwt`), signed ES256 by the platform (RFC 9068 asks for RS256
 * support; the interface spec mandates ES256 for everything). Two kinds:
 * - `exchange`: delegation tokens from token exchange: `aud` = the callee's SPIFFE ID, `scope` =
 *   `tools:...`, `act` = the delegation chain;
 * - `client_credentials`: tokens for the platform's own API: `aud` = the API URL, `scope` =
 *   permissions.
 * Every token is recorded by jti; a token is active only while its row, and the API key or agent key
 * it derives from, are not revoked.
 */

const ACCESS_TOKEN_LIFETIME_S = 3600;
/** Delegation chains deeper than this are refused. */
export const MAX_ACT_DEPTH = 8;

export interface MintInput {
  kind: AccessTokenKind;
  tenantId: string;
  sub: string;
  aud: string;
  clientId: string;
  scope: string[];
  act?: Act;
  agentId?: string | null;
  apiKeyId?: string | null;
  agentKeyId?: string | null;
  parentJti?: string | null;
  /** The audit event of the issuance, written in the same transaction as the token's record. */
  audit: (claims: AccessClaims) => AuditInput;
}

/** Signs a token, then records it and its audit event in one transaction (one commit). */
export async function mintAccessToken(ctx: IdentityContext, input: MintInput): Promise<{ token: string; claims: AccessClaims }> {
  const scope = input.scope.join(' ');
  const signed = await ctx.tokens.sign({
    typ: TYP.accessToken,
    sub: input.sub,
    aud: input.aud,
    lifetimeS: ACCESS_TOKEN_LIFETIME_S,
    payload: {
      client_id: input.clientId,
      scope,
      ...(input.act ? { act: input.act } : {}),
      tenant_id: input.tenantId,
    },
  });
  const claims: AccessClaims = {
    iss: ctx.issuer,
    sub: input.sub,
    aud: input.aud,
    client_id: input.clientId,
    scope,
    iat: signed.iat,
    exp: signed.exp,
    jti: signed.jti,
    ...(input.act ? { act: input.act } : {}),
    tenant_id: input.tenantId,
  };
  const record = {
    jti: signed.jti,
    tenant_id: input.tenantId,
    kind: input.kind,
    agent_id: input.agentId ?? null,
    client_id: input.clientId,
    api_key_id: input.apiKeyId ?? null,
    agent_key_id: input.agentKeyId ?? null,
    parent_jti: input.parentJti ?? null,
    issued_at: iso(signed.iat * 1000),
    expires_at: iso(signed.exp * 1000),
    revoked_at: null,
  };
  await ctx.db.kysely.transaction().execute(async (trx) => {
    await store.insertToken(trx, record);
    await recordAudit(trx, input.audit(claims));
  });
  ctx.observer?.tokenIssued(record.kind, input.tenantId);
  return {
    token: signed.token,
    claims,
  };
}

export function actDepth(act: unknown): number {
  let depth = 0;
  let cur = act as Act | undefined;
  while (cur && typeof cur === 'object') {
    depth++;
    if (depth > MAX_ACT_DEPTH + 1) break;
    cur = cur.act;
  }
  return depth;
}

function isAct(value: unknown, depth = 0): value is Act {
  if (!value || typeof value !== 'object' || depth > MAX_ACT_DEPTH) return false;
  const v = value as Record<string, unknown>;
  return typeof v.sub === 'string' && (v.act === undefined || isAct(v.act, depth + 1));
}

/** Throws TokenError unless the state says the token and its source credentials are in force. */
function assertInForce(
  state: TokenState | null | undefined,
  tenantId: string,
  kinds: readonly string[],
  claims?: AccessClaims,
): TokenState {
  const fail = (reason: string): never => {
    throw new TokenError(reason, claims as unknown as Record<string, unknown> | undefined);
  };
  if (!state || state.tenant_id !== tenantId || !kinds.includes(state.kind)) return fail('the token is unknown to this platform');
  if (state.revoked_at) fail('the token has been revoked');
  if (state.api_key_id && !state.api_key_in_force) fail('the API key the token was issued to has been revoked');
  if (state.agent_key_id && (state.agent_key_status === 'revoked' || !state.agent_key_status))
    fail('the agent key behind the token has been revoked');
  return state;
}

/** Throws TokenError unless the token's row and its source credentials are still in force. */
export async function checkNotRevoked(ctx: IdentityContext, jti: string, tenantId: string, kinds: string[]): Promise<TokenState> {
  return assertInForce(await readTokenState(ctx, jti), tenantId, kinds);
}

async function readTokenState(ctx: IdentityContext, jti: string): Promise<TokenState | undefined> {
  const row = await store.findTokenStateByJti(ctx.db.kysely, jti);
  if (!row) return undefined;
  const apiKey = row.api_key_id ? await ctx.tenancy.apiKeyRateLimit(row.api_key_id) : null;
  return { ...row, api_key_in_force: row.api_key_id ? apiKey !== undefined : null };
}

function checkShape(payload: Record<string, unknown>) {
  const p = payload;
  if (
    typeof p.sub !== 'string' ||
    typeof p.aud !== 'string' ||
    typeof p.client_id !== 'string' ||
    typeof p.scope !== 'string' ||
    typeof p.jti !== 'string' ||
    typeof p.iat !== 'number' ||
    typeof p.exp !== 'number' ||
    typeof p.tenant_id !== 'string' ||
    (p.act !== undefined && !isAct(p.act))
  ) {
    throw new TokenError('the token lacks required claims', p);
  }
  return p as unknown as AccessClaims;
}

/**
 * Verifies an access token: ES256 signature by a published platform key, `typ` at+jwt (or
 * application/at+jwt), `iss`, `exp`, `aud` (when `audience` is given), the claim shapes, and that it
 * is not revoked. Throws TokenError.
 */
export async function verifyAccessToken(
  ctx: IdentityContext,
  token: string,
  opts: { audience?: string[]; kinds?: AccessTokenKind[] } = {},
): Promise<AccessClaims & { kind: AccessTokenKind }> {
  const { payload } = await ctx.tokens.verify(token, ['at+jwt'], opts.audience);
  const claims = checkShape(payload);
  const state = assertInForce(
    await readTokenState(ctx, claims.jti),
    claims.tenant_id,
    opts.kinds ?? ['exchange', 'client_credentials'],
    claims,
  );
  await ctx.standings.check(claims, namedAgents(claims, ctx.trustDomain));
  return { ...claims, kind: state.kind as AccessTokenKind };
}

/**
 * verifyAccessToken for the authorization hot path: a token whose signature and claims were checked
 * a moment ago is not checked again (its `exp` is), and its revocation state is read at most once per
 * DECISION_CACHE_MS; revocations made by this process clear those caches at once. Rejects with TokenError.
 */
export async function verifyAccessTokenCached(
  ctx: IdentityContext,
  token: string,
  kinds: readonly AccessTokenKind[],
): Promise<VerifiedToken> {
  const hit = ctx.hot.verified.get(token);
  if (!hit) return verifyAndRemember(ctx, token, kinds);
  if (hit.claims.exp * 1000 <= ctx.clock.now())
    throw new TokenError('the token has expired', hit.claims as unknown as Record<string, unknown>);
  return inForce(ctx, hit, kinds);
}

async function verifyAndRemember(ctx: IdentityContext, token: string, kinds: readonly AccessTokenKind[]): Promise<VerifiedToken> {
  const { payload } = await ctx.tokens.verify(token, ['at+jwt']);
  const claims = checkShape(payload);
  const entry: VerifiedToken = { claims, agents: namedAgents(claims, ctx.trustDomain) };
  ctx.hot.verified.set(token, entry, entry.claims.exp * 1000 - ctx.clock.now());
  return inForce(ctx, entry, kinds);
}

/** The entry, once it is not revoked, of one of `kinds`, and every agent it names exists and is not suspended. */
async function inForce(ctx: IdentityContext, entry: VerifiedToken, kinds: readonly AccessTokenKind[]): Promise<VerifiedToken> {
  const { claims } = entry;
  let state = ctx.hot.tokenStates.get(claims.jti);
  if (state === undefined) state = await loadState(ctx, claims.jti);
  assertInForce(state, claims.tenant_id, kinds, claims);
  await ctx.standings.check(claims, entry.agents);
  return entry;
}

async function loadState(ctx: IdentityContext, jti: string): Promise<TokenState | null> {
  const state = (await readTokenState(ctx, jti)) ?? null;
  ctx.hot.tokenStates.set(jti, state);
  return state;
}
