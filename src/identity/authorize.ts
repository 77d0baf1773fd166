import { verifyAccessTokenCached } from './access-token.js';
import type { AccessTokenKind, VerifiedToken } from './claims.js';
import { parseAudience } from './audience.js';
import type { IdentityContext } from './context.js';
import { scopeCovers } from './exchange.js';
import { parseAgentSpiffeId } from './spiffe.js';
import type { Decision, Reason as PolicyReason } from './tbac.js';
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
 *
 * What it derives from a token (its agents, its scope) is kept with the verified token.
 */

type AuthorizeReason = 'token_invalid' | 'tool_not_in_scope' | PolicyReason;

export interface AuthorizeResult {
  allowed: boolean;
  reason: AuthorizeReason;
  /** Why, in words (token problems), for logs and humans; never secret. */
  detail?: string;
  policyId?: string;
}

const DELEGATION: readonly AccessTokenKind[] = ['exchange'];
const ACTION = 'identity.authorization_decided';

/** What authorize derives from a verified token, once per token. */
interface Derived {
  tenantId: string;
  jti: string;
  /** The agents the token names (audience, current actor), or null when they are not of its tenant. */
  calleeAgentId: string | null;
  callerAgentId: string | null;
  /** The token's scopes (`tools:*`, `tools:<name>`), split once. */
  scopes: string[];
}

function derive(ctx: IdentityContext, verified: VerifiedToken): Derived {
  if (verified.derived) return verified.derived as Derived;
  const claims = verified.claims;
  const aud = parseAgentSpiffeId(claims.aud, ctx.trustDomain);
  const caller = parseAgentSpiffeId(claims.act?.sub ?? '', ctx.trustDomain);
  const ofTenant = aud !== null && caller !== null && aud.tenantId === claims.tenant_id && caller.tenantId === claims.tenant_id;
  const derived: Derived = {
    tenantId: claims.tenant_id,
    jti: claims.jti,
    calleeAgentId: ofTenant ? aud.agentId : null,
    // Even when the token names no agents of its tenant, its caller (if any) is the audit's actor.
    callerAgentId: caller?.agentId ?? null,
    scopes: claims.scope.split(' '),
  };
  verified.derived = derived;
  return derived;
}

export async function authorize(ctx: IdentityContext, token: string | undefined, tool: string, callee: string): Promise<AuthorizeResult> {
  let verified: VerifiedToken;
  try {
    if (!token) throw new TokenError('no token was sent (body token or Authorization: Bearer)');
    verified = await verifyAccessTokenCached(ctx, token, DELEGATION);
  } catch (err) {
    return refused(ctx, err, tool, callee);
  }
  return decide(ctx, verified, tool, callee);
}

/**
 * The request a decision is about, as its audit event names it: the token's tenant (no tenant: not
 * audited) and jti, the calling agent, the agent called, the tool.
 */
interface AuditedRequest {
  tenantId: string | null;
  jti: string | null;
  caller: string | null;
  callee: string | null;
  tool: string;
}

/** token_invalid for a token that did not verify; audited when its tenant is trustworthy. */
function refused(ctx: IdentityContext, err: unknown, tool: string, callee: string): AuthorizeResult {
  if (!(err instanceof TokenError)) throw err;
  const tenantId = typeof err.verifiedPayload?.tenant_id === 'string' ? err.verifiedPayload.tenant_id : null;
  const calleeRef = parseAudience(callee, ctx.trustDomain, ctx.publicBaseUrl);
  return record(
    ctx,
    { tenantId, jti: null, caller: null, callee: calleeRef?.agentId ?? null, tool },
    { allowed: false, reason: 'token_invalid', detail: err.reason },
  );
}

async function decide(ctx: IdentityContext, verified: VerifiedToken, tool: string, callee: string): Promise<AuthorizeResult> {
  const d = derive(ctx, verified);
  const calleeRef = parseAudience(callee, ctx.trustDomain, ctx.publicBaseUrl);
  const tenantId = d.tenantId;
  const calleeId = d.calleeAgentId;
  const callerId = d.callerAgentId;
  // The callee the request names (the token's own, once the checks below hold).
  const request: AuditedRequest = { tenantId, jti: d.jti, caller: callerId, callee: calleeRef?.agentId ?? null, tool };
  if (calleeId === null || callerId === null) {
    return record(ctx, request, { allowed: false, reason: 'token_invalid', detail: 'the token names no agents of its tenant' });
  }
  if (!calleeRef || calleeRef.agentId !== calleeId || (calleeRef.tenantId !== undefined && calleeRef.tenantId !== tenantId)) {
    return record(ctx, request, { allowed: false, reason: 'token_invalid', detail: 'the token was issued for another callee (aud)' });
  }
  if (!scopeCovers(d.scopes, tool)) {
    return record(ctx, request, { allowed: false, reason: 'tool_not_in_scope' });
  }
  const decision = await ctx.policies.evaluate(tenantId, { caller: callerId, callee: calleeId, tool }, ctx.clock.now());
  return record(ctx, request, resultOf(decision));
}

function resultOf(decision: Decision): AuthorizeResult {
  return decision.policyId
    ? { allowed: decision.allowed, reason: decision.reason, policyId: decision.policyId }
    : { allowed: decision.allowed, reason: decision.reason };
}

function record(ctx: IdentityContext, request: AuditedRequest, result: AuthorizeResult): AuthorizeResult {
  const { tenantId, caller, callee, tool, jti } = request;
  if (tenantId) {
    ctx.audit.addRow({
      tenant_id: tenantId,
      actor_type: 'agent',
      actor_id: caller,
      action: ACTION,
      resource_type: 'agent',
      resource_id: callee,
      detail: detailJson(tool, result, jti),
    });
  }
  ctx.observer?.authorized(result.allowed, result.reason, tenantId);
  return result;
}

function detailJson(tool: string, result: AuthorizeResult, jti: string | null): string {
  return JSON.stringify({
    tool,
    allowed: result.allowed,
    reason: result.reason,
    policyId: result.policyId ?? null,
    jti,
    ...(result.detail ? { detail: result.detail } : {}),
  });
}
