import { verifyAccessToken, type AccessClaims } from './access-token.js';
import { parseAudience } from './audience.js';
import type { IdentityContext } from './context.js';
import { scopeCovers } from './exchange.js';
import { parseAgentSpiffeId } from './spiffe.js';
import type { Reason as PolicyReason } from './tbac.js';
import { TokenError } from './tokens.js';

/**
 * ExtAuthZ: may the bearer of this delegation token call `tool` on `callee`? Checks, in order:
 * 1. the token is valid: ES256 signature by a platform key, typ at+jwt, iss, exp, not revoked, an
 *    exchanged (delegation) token, and `callee` is its audience -> else `token_invalid`;
 * 2. the tool is in its scope (`tools:<tool>` or `tools:*`) -> else `tool_not_in_scope`;
 * 3. TBAC for (current actor, callee, tool): the deciding policy -> `policy_allow` / `policy_deny`;
 * 4. no policy: the tenant's mode -> `no_policy_audit_allow` / `no_policy_enforce_deny`.
 * A bad token is an answer (200, allowed false, token_invalid), not an HTTP error: the caller is a
 * proxy or tool server that needs a decision. Every decision is audited in the token's tenant, except
 * for tokens whose signature does not verify (no trustworthy tenant; those are logged only).
 */

export type AuthorizeReason = 'token_invalid' | 'tool_not_in_scope' | PolicyReason;

export interface AuthorizeResult {
  allowed: boolean;
  reason: AuthorizeReason;
  /** Why, in words (token problems), for logs and humans; never secret. */
  detail?: string;
  policyId?: string;
}

export async function authorize(ctx: IdentityContext, token: string | undefined, tool: string, callee: string): Promise<AuthorizeResult> {
  const calleeRef = parseAudience(callee, ctx.trustDomain, ctx.publicBaseUrl);
  let claims: AccessClaims;
  try {
    if (!token) throw new TokenError('no token was sent (body token or Authorization: Bearer)');
    claims = await verifyAccessToken(ctx, token, { kinds: ['exchange'], cached: true });
  } catch (err) {
    if (!(err instanceof TokenError)) throw err;
    const tenantId = typeof err.verifiedPayload?.tenant_id === 'string' ? err.verifiedPayload.tenant_id : null;
    return record(ctx, tenantId, null, calleeRef?.agentId ?? null, tool, { allowed: false, reason: 'token_invalid', detail: err.reason }, null);
  }
  const aud = parseAgentSpiffeId(claims.aud, ctx.trustDomain);
  const caller = parseAgentSpiffeId(claims.act?.sub ?? '', ctx.trustDomain);
  const tenantId = claims.tenant_id;
  if (!aud || !caller || aud.tenantId !== tenantId || caller.tenantId !== tenantId) {
    return record(ctx, tenantId, caller?.agentId ?? null, calleeRef?.agentId ?? null, tool, { allowed: false, reason: 'token_invalid', detail: 'the token names no agents of its tenant' }, claims.jti);
  }
  if (!calleeRef || calleeRef.agentId !== aud.agentId || (calleeRef.tenantId !== undefined && calleeRef.tenantId !== tenantId)) {
    return record(ctx, tenantId, caller.agentId, calleeRef?.agentId ?? null, tool, { allowed: false, reason: 'token_invalid', detail: 'the token was issued for another callee (aud)' }, claims.jti);
  }
  if (!scopeCovers(claims.scope.split(' '), tool)) {
    return record(ctx, tenantId, caller.agentId, aud.agentId, tool, { allowed: false, reason: 'tool_not_in_scope' }, claims.jti);
  }
  const decision = await ctx.policies.evaluate(tenantId, caller.agentId, aud.agentId, tool, ctx.clock.now());
  return record(
    ctx,
    tenantId,
    caller.agentId,
    aud.agentId,
    tool,
    { allowed: decision.allowed, reason: decision.reason, ...(decision.policyId ? { policyId: decision.policyId } : {}) },
    claims.jti,
  );
}

function record(
  ctx: IdentityContext,
  tenantId: string | null,
  caller: string | null,
  callee: string | null,
  tool: string,
  result: AuthorizeResult,
  jti: string | null,
): AuthorizeResult {
  if (tenantId) {
    ctx.audit.add({
      tenantId,
      actor: { type: 'agent', id: caller },
      action: 'identity.authorization_decided',
      resourceType: 'agent',
      resourceId: callee,
      detail: { tool, allowed: result.allowed, reason: result.reason, policyId: result.policyId ?? null, jti, ...(result.detail ? { detail: result.detail } : {}) },
    });
  }
  return result;
}
