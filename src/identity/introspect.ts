import type { Principal } from '../tenancy/permissions.js';
import { verifyAccessToken, type Act } from './access-token.js';
import type { IdentityContext } from './context.js';
import { TokenError, looksLikeJwt } from './tokens.js';

/**
 * RFC 7662 introspection of the platform's access tokens (`at+jwt`, both kinds). Always 200:
 * `{ active: false }` and nothing else for a token that is invalid, expired, revoked, not an access
 * token, or of another tenant than the caller's; otherwise `active: true` with its claims.
 */

export type IntrospectionResponse =
  | { active: false }
  | {
      active: true;
      scope: string;
      client_id: string;
      sub: string;
      aud: string;
      iss: string;
      exp: number;
      iat: number;
      jti: string;
      token_type: 'Bearer';
      act?: Act;
    };

export async function introspect(ctx: IdentityContext, caller: Principal, token: string | undefined): Promise<IntrospectionResponse> {
  if (!token || !looksLikeJwt(token)) return { active: false };
  try {
    const c = await verifyAccessToken(ctx, token);
    if (c.tenant_id !== caller.tenantId) return { active: false };
    return {
      active: true,
      scope: c.scope,
      client_id: c.client_id,
      sub: c.sub,
      aud: c.aud,
      iss: c.iss,
      exp: c.exp,
      iat: c.iat,
      jti: c.jti,
      token_type: 'Bearer',
      ...(c.act ? { act: c.act } : {}),
    };
  } catch (err) {
    if (err instanceof TokenError) return { active: false };
    throw err;
  }
}
