import type { Principal } from '../tenancy/permissions.js';
import { verifyAccessToken } from './access-token.js';
import type { AccessClaims } from './claims.js';
import type { IdentityContext } from './context.js';
import { TokenError, looksLikeJwt } from './tokens.js';

/**
 * RFC 7662 introspection of the platform's access tokens (`at+jwt`, both kinds). Always 200:
 * `{ active: false }` and nothing else for a token that is invalid, expired, revoked, not an access
 * token, or of another tenant than the caller's; otherwise `active: true` with every claim of the
 * token (spec 4.5 "full claims"), and `token_type`.
 */

export type IntrospectionResponse = { active: false } | ({ active: true; token_type: 'Bearer' } & AccessClaims & Record<string, unknown>);

export async function introspect(ctx: IdentityContext, caller: Principal, token: string | undefined): Promise<IntrospectionResponse> {
  if (!token || !looksLikeJwt(token)) return { active: false };
  try {
    const { kind: _kind, ...claims } = await verifyAccessToken(ctx, token);
    if (claims.tenant_id !== caller.tenantId) return { active: false };
    // Spec 4.5: the full claims of the token, as signed (tenant_id included).
    return { active: true, token_type: 'Bearer', ...claims };
  } catch (err) {
    if (err instanceof TokenError) return { active: false };
    throw err;
  }
}
