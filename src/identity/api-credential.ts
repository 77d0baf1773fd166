import { Unauthenticated } from '../errors.js';
import { isPermission, type Permission, type Principal } from '../tenancy/permissions.js';
import { verifyAccessToken } from './access-token.js';
import type { AccessClaims, AccessTokenKind } from './claims.js';
import type { IdentityContext } from './context.js';
import { parseAgentSpiffeId } from './spiffe.js';
import { looksLikeJwt, normalisedTyp, peekHeader, TokenError } from './tokens.js';

/**
 * Credential verifier for the main API: `client_credentials` access tokens (at+jwt, aud = the API)
 * authenticate like API keys; their scope holds the permissions. Null: not such a token.
 */
export async function verifyApiCredential(ctx: IdentityContext, credential: string): Promise<Principal | null> {
  if (!looksLikeJwt(credential)) return null;
  const header = peekHeader(credential);
  if (!header || normalisedTyp(header) !== 'at+jwt') return null;
  let claims: AccessClaims & { kind: AccessTokenKind };
  try {
    claims = await verifyAccessToken(ctx, credential);
  } catch (err) {
    if (err instanceof TokenError) return null;
    throw err;
  }
  // A delegation token (token exchange) is valid, but for agent-to-agent calls: say so.
  if (claims.kind !== 'client_credentials' || claims.aud !== ctx.apiAudience) {
    throw new Unauthenticated(
      'delegation_token',
      'this is a delegation token (token exchange) for agent-to-agent calls: the callee checks it with POST /api/v1/identity/authorize; the API takes an API key or a client_credentials access token',
      'Bearer',
    );
  }
  const permissions = new Set(claims.scope.split(' ').filter(isPermission) as Permission[]);
  const agent = parseAgentSpiffeId(claims.sub, ctx.trustDomain);
  if (agent) {
    // An agent's own token: it acts as that agent and reaches only what the agent needs.
    return { tenantId: claims.tenant_id, actor: { type: 'access_token', id: agent.agentId }, permissions, agentId: agent.agentId };
  }
  // Minted from an API key (its client_id): counted against that key's request limit.
  const key = await ctx.tenancy.apiKeyRateLimit(claims.client_id);
  if (!key) return null;
  return {
    tenantId: claims.tenant_id,
    actor: { type: 'access_token', id: claims.client_id },
    permissions,
    apiKeyId: claims.client_id,
    rateLimitPerMinute: key.rateLimitPerMinute,
  };
}
