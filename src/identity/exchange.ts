import { MAX_ACT_DEPTH, actDepth, mintAccessToken, verifyAccessToken } from './access-token.js';
import type { AccessClaims, Act } from './claims.js';
import { clientIdUrl, parseAudience } from './audience.js';
import type { IdentityContext } from './context.js';
import { OAuthError } from './oauth-errors.js';
import { verifySvid, type VerifiedSvid } from './svid.js';
import { TokenError, normalisedTyp, peekHeader } from './tokens.js';

/**
 * RFC 8693 token exchange: an agent trades its SVID (or an access token it received, plus its SVID
 * as actor token) for an `at+jwt` that lets it call tools of one target agent.
 *
 * - `subject_token` (required): an SVID (`subject_token_type` ...:jwt) whose `aud` names the issuer
 *   or the token endpoint; or an access token from an earlier exchange (`...:access_token`), which
 *   then needs `actor_token`: the SVID of the agent the access token was issued to (re-delegation).
 * - `actor_token` / `actor_token_type` (together or not at all): the SVID of the agent acting.
 * - `audience` / `resource` (at least one; may repeat): the target agent in any of the three formats;
 *   every value must name the same agent, of the caller's tenant (else `invalid_target`).
 * - `scope` (required): space-separated `tools:<name>` or `tools:*` (else `invalid_scope`).
 *   Re-delegation cannot widen the subject token's scope, and TBAC must not forbid a tool for this
 *   caller and callee (both `insufficient_scope`).
 *
 * The result: `sub` = the original subject, `aud` = the target's SPIFFE ID, `act` = the chain with
 * the current actor outermost, `client_id` = the current actor's client ID URL, 1 hour lifetime.
 */

export const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const TOKEN_TYPE = {
  jwt: 'urn:ietf:params:oauth:token-type:jwt',
  accessToken: 'urn:ietf:params:oauth:token-type:access_token',
  idToken: 'urn:ietf:params:oauth:token-type:id_token',
} as const;

const TOOL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$/;
const isToolName = (s: string) => TOOL_NAME.test(s);

export interface ExchangeRequest {
  subject_token?: string;
  subject_token_type?: string;
  actor_token?: string;
  actor_token_type?: string;
  requested_token_type?: string;
  audience: string[];
  resource: string[];
  scope?: string;
}

export interface ExchangeResponse {
  access_token: string;
  issued_token_type: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

/** `tools:<name>` / `tools:*` scopes, deduplicated, in request order; OAuthError otherwise. */
function parseToolScopes(scope: string | undefined): string[] {
  if (scope === undefined || scope.trim() === '')
    throw new OAuthError('invalid_request', 'scope is required (space-separated tools:<name> or tools:*)');
  const scopes = [...new Set(scope.split(' ').filter(Boolean))];
  const bad = scopes.filter((s) => !(s === 'tools:*' || (s.startsWith('tools:') && isToolName(s.slice(6)))));
  if (bad.length) throw new OAuthError('invalid_scope', `not a tool scope (tools:<name> or tools:*): ${bad.join(' ').slice(0, 200)}`);
  return scopes;
}

export const scopeCovers = (granted: string[], tool: string) => granted.includes('tools:*') || granted.includes(`tools:${tool}`);

function requireSvidType(type: string | undefined, which: string) {
  if (type !== TOKEN_TYPE.jwt) throw new OAuthError('invalid_request', `${which}_token_type must be ${TOKEN_TYPE.jwt} for an SVID`);
}

async function svidOrGrantError(ctx: IdentityContext, token: string, which: string): Promise<VerifiedSvid> {
  try {
    return await verifySvid(ctx, token);
  } catch (err) {
    if (err instanceof TokenError) throw new OAuthError('invalid_grant', `${which}_token: ${err.reason}`);
    throw err;
  }
}

export async function exchangeToken(ctx: IdentityContext, req: ExchangeRequest): Promise<ExchangeResponse> {
  if (!req.subject_token) throw new OAuthError('invalid_request', 'subject_token is required');
  if (!req.subject_token_type) throw new OAuthError('invalid_request', 'subject_token_type is required');
  if (req.actor_token && !req.actor_token_type) throw new OAuthError('invalid_request', 'actor_token_type is required with actor_token');
  if (!req.actor_token && req.actor_token_type)
    throw new OAuthError('invalid_request', 'actor_token_type must not be sent without actor_token');
  const knownTypes: string[] = Object.values(TOKEN_TYPE);
  if (!knownTypes.includes(req.subject_token_type))
    throw new OAuthError('invalid_request', 'subject_token_type is not a token type URI this server knows');
  if (req.subject_token_type === TOKEN_TYPE.idToken)
    throw new OAuthError('invalid_request', 'id_token subject tokens are not supported; send an SVID');
  if (req.requested_token_type && req.requested_token_type !== TOKEN_TYPE.accessToken && req.requested_token_type !== TOKEN_TYPE.jwt) {
    throw new OAuthError('invalid_request', 'requested_token_type can only be an access token');
  }
  const targets = [...req.audience, ...req.resource];
  if (!targets.length)
    throw new OAuthError('invalid_request', 'audience is required: the target agent (SPIFFE ID, client ID URL or agent id)');
  const scopes = parseToolScopes(req.scope);

  // Who is the subject, and who acts now.
  const header = peekHeader(req.subject_token);
  if (!header) throw new OAuthError('invalid_grant', 'subject_token is not a JWT');
  let subjectSub: string;
  let tenantId: string;
  let previousAct: Act | undefined;
  let grantedScopes: string[] | null = null;
  let parentJti: string;
  let actor: VerifiedSvid;

  if (normalisedTyp(header) === 'at+jwt') {
    if (req.subject_token_type !== TOKEN_TYPE.accessToken && req.subject_token_type !== TOKEN_TYPE.jwt) {
      throw new OAuthError('invalid_request', `subject_token_type must be ${TOKEN_TYPE.accessToken} for an access token`);
    }
    if (!req.actor_token) {
      throw new OAuthError('invalid_request', 'an access token as subject_token needs actor_token: the SVID of the agent it was issued to');
    }
    let subject: AccessClaims;
    try {
      subject = await verifyAccessToken(ctx, req.subject_token, { kinds: ['exchange'] });
    } catch (err) {
      if (err instanceof TokenError) throw new OAuthError('invalid_grant', `subject_token: ${err.reason}`);
      throw err;
    }
    requireSvidType(req.actor_token_type, 'actor');
    actor = await svidOrGrantError(ctx, req.actor_token, 'actor');
    if (actor.spiffeId !== subject.aud)
      throw new OAuthError('invalid_grant', 'the subject token was not issued to the agent of the actor token');
    subjectSub = subject.sub;
    tenantId = subject.tenant_id;
    previousAct = subject.act ?? { sub: subject.sub };
    grantedScopes = subject.scope.split(' ').filter(Boolean);
    parentJti = subject.jti;
  } else {
    if (req.subject_token_type !== TOKEN_TYPE.jwt) {
      throw new OAuthError('invalid_request', `subject_token_type must be ${TOKEN_TYPE.jwt} for an SVID`);
    }
    const subject = await svidOrGrantError(ctx, req.subject_token, 'subject');
    subjectSub = subject.spiffeId;
    tenantId = subject.tenantId;
    parentJti = subject.jti;
    if (req.actor_token) {
      requireSvidType(req.actor_token_type, 'actor');
      actor = await svidOrGrantError(ctx, req.actor_token, 'actor');
    } else {
      actor = subject;
    }
  }
  if (actor.tenantId !== tenantId)
    throw new OAuthError('invalid_grant', 'the actor token belongs to another tenant than the subject token');

  const act: Act = previousAct ? { sub: actor.spiffeId, act: previousAct } : { sub: actor.spiffeId };
  if (actDepth(act) > MAX_ACT_DEPTH) throw new OAuthError('invalid_grant', `the delegation chain is longer than ${MAX_ACT_DEPTH}`);

  // The one target agent, in the caller's tenant.
  let targetId: string | null = null;
  for (const value of targets) {
    const ref = parseAudience(value, ctx.trustDomain, ctx.publicBaseUrl);
    if (!ref) throw new OAuthError('invalid_target', 'audience must be an agent SPIFFE ID, client ID URL or agent id');
    if (targetId !== null && ref.agentId !== targetId)
      throw new OAuthError('invalid_target', 'all audience and resource values must name the same agent');
    targetId = ref.agentId;
    const agent = await ctx.agents.identityAnyTenant(ref.agentId);
    if (!agent || (ref.tenantId !== undefined && ref.tenantId !== agent.tenant_id) || agent.tenant_id !== tenantId) {
      // Absent and other-tenant look the same: other tenants' agents are never revealed.
      throw new OAuthError('invalid_target', 'the target agent was not found in the caller tenant');
    }
    if ((await ctx.standings.of(tenantId, agent.id)) === 'suspended')
      throw new OAuthError('invalid_target', 'the identity of the target agent is suspended (paused)');
  }
  const target = targetId!;

  if (grantedScopes) {
    const wider = scopes.filter((s) => !(grantedScopes.includes('tools:*') || grantedScopes.includes(s)));
    if (wider.length) throw new OAuthError('insufficient_scope', `the subject token does not grant ${wider.join(' ').slice(0, 200)}`);
  }
  const now = ctx.clock.now();
  const forbidden: string[] = [];
  for (const s of scopes) {
    const decision = await ctx.policies.evaluate(tenantId, { caller: actor.agentId, callee: target, tool: s.slice('tools:'.length) }, now);
    if (!decision.allowed) forbidden.push(s);
  }
  if (forbidden.length) {
    throw new OAuthError('insufficient_scope', `policy does not allow ${forbidden.join(' ').slice(0, 200)} for this caller and callee`);
  }

  const targetSpiffe = ctx.spiffeIdOf(tenantId, target);
  const { token, claims } = await mintAccessToken(ctx, {
    kind: 'exchange',
    tenantId,
    sub: subjectSub,
    aud: targetSpiffe,
    clientId: clientIdUrl(ctx.publicBaseUrl, actor.agentId),
    scope: scopes,
    act,
    agentId: actor.agentId,
    agentKeyId: actor.agentKeyId,
    parentJti,
    audit: (claims) => ({
      tenantId,
      actor: { type: 'agent', id: actor.agentId },
      action: 'identity.token_exchanged',
      resourceType: 'agent',
      resourceId: target,
      detail: { jti: claims.jti, scope: claims.scope, sub: subjectSub, parentJti, actDepth: actDepth(act) },
    }),
  });
  return {
    access_token: token,
    issued_token_type: TOKEN_TYPE.accessToken,
    token_type: 'Bearer',
    expires_in: claims.exp - claims.iat,
    scope: claims.scope,
  };
}
