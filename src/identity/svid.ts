import { type AuditInput, recordAudit } from '../tenancy/audit.js';
import { checkNotRevoked } from './access-token.js';
import type { IdentityContext } from './context.js';
import { iso } from './key-material.js';
import { parseAgentSpiffeId } from './spiffe.js';
import * as store from './store.js';
import { TYP, TokenError } from './tokens.js';

/**
 * JWT-SVIDs (SPIFFE JWT-SVID standard): header `alg` ES256, `kid`, `typ` JWT (nothing else);
 * claims `sub` = the agent's SPIFFE ID, `aud` (one value as a string, several as an array), `exp`,
 * `iat`, `jti`, `iss` = the issuer. Each SVID is bound (in the token store) to the agent key that
 * was active when it was issued: revoking that key deactivates the SVID and what was exchanged for it.
 */

export const SVID_DEFAULT_TTL_S = 3600;
export const SVID_MAX_TTL_S = 86_400;

export interface IssuedSvid {
  svid: string;
  spiffeId: string;
  expiresAt: string;
  jti: string;
}

/** An SVID asked for: the agent it names, its audience, its lifetime in seconds. */
export interface SvidRequest {
  tenantId: string;
  agentId: string;
  audience: string[];
  ttlS: number;
  /** The audit event of the issuance, written in the transaction that records the SVID. */
  audit: (jti: string) => AuditInput;
}

export async function issueSvid(ctx: IdentityContext, { tenantId, agentId, audience, ttlS, audit }: SvidRequest): Promise<IssuedSvid> {
  const agentKey = await ctx.agentKeys.ensureActive(tenantId, agentId);
  const spiffeId = ctx.spiffeIdOf(tenantId, agentId);
  const signed = await ctx.tokens.sign({
    typ: TYP.svid,
    sub: spiffeId,
    aud: audience.length === 1 ? audience[0] : audience,
    lifetimeS: ttlS,
    payload: {},
  });
  await ctx.db.kysely.transaction().execute(async (trx) => {
    await store.insertToken(trx, {
      jti: signed.jti,
      tenant_id: tenantId,
      kind: 'svid',
      agent_id: agentId,
      client_id: null,
      api_key_id: null,
      agent_key_id: agentKey.kid,
      parent_jti: null,
      issued_at: iso(signed.iat * 1000),
      expires_at: iso(signed.exp * 1000),
      revoked_at: null,
    });
    await recordAudit(trx, audit(signed.jti));
  });
  ctx.observer?.tokenIssued('svid', tenantId);
  return { svid: signed.token, spiffeId, expiresAt: iso(signed.exp * 1000), jti: signed.jti };
}

export interface VerifiedSvid {
  tenantId: string;
  agentId: string;
  spiffeId: string;
  jti: string;
  agentKeyId: string | null;
}

/**
 * Verifies an SVID presented to the platform (token exchange): signature, `typ` absent/JWT/JOSE,
 * `iss`, `exp`, `aud` containing the issuer or the token endpoint URL, `sub` an agent SPIFFE ID of
 * this trust domain whose agent exists, and not revoked. Throws TokenError.
 */
export async function verifySvid(ctx: IdentityContext, token: string): Promise<VerifiedSvid> {
  const { payload } = await ctx.tokens.verify(token, [null, 'jwt', 'jose'], [ctx.issuer, ctx.tokenEndpoint]);
  const ref = typeof payload.sub === 'string' ? parseAgentSpiffeId(payload.sub, ctx.trustDomain) : null;
  if (!ref) throw new TokenError('sub is not an agent SPIFFE ID of this trust domain');
  if (typeof payload.jti !== 'string') throw new TokenError('the SVID has no jti');
  const state = await checkNotRevoked(ctx, payload.jti, ref.tenantId, ['svid']);
  const standing = await ctx.standings.of(ref.tenantId, ref.agentId);
  if (standing === 'gone') throw new TokenError('the agent of the SVID no longer exists');
  if (standing === 'suspended') throw new TokenError('the identity of the agent of the SVID is suspended (paused)');
  return {
    tenantId: ref.tenantId,
    agentId: ref.agentId,
    spiffeId: payload.sub as string,
    jti: payload.jti,
    agentKeyId: state.agent_key_id,
  };
}
