import { clientCredentials, type ClientCredentialsRequest } from './client-credentials.js';
import type { IdentityContext } from './context.js';
import { type ExchangeRequest, exchangeToken, GRANT_TOKEN_EXCHANGE } from './exchange.js';
import { OAuthError } from './oauth-errors.js';

/**
 * The token endpoint's grants: token exchange (RFC 8693) or client_credentials, read from the form's
 * parameters (a parameter given twice is refused). Throws OAuthError.
 */
export function tokenGrant(ctx: IdentityContext, params: Record<string, string | string[] | undefined>, authorization?: string) {
  const one = (name: string): string | undefined => {
    const v = params[name];
    if (Array.isArray(v)) {
      if (v.length > 1) throw new OAuthError('invalid_request', `${name} must not repeat`);
      return v[0];
    }
    return v;
  };
  const many = (name: string): string[] => {
    const v = params[name];
    return v === undefined ? [] : [v].flat();
  };
  const grantType = one('grant_type');
  if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
  if (grantType === GRANT_TOKEN_EXCHANGE) {
    if (one('client_assertion') !== undefined || one('client_secret') !== undefined || /^Basic\s/i.test(authorization ?? '')) {
      throw new OAuthError('invalid_request', 'token exchange is authenticated by the subject token; send no client credentials');
    }
    const req: ExchangeRequest = {
      subject_token: one('subject_token'),
      subject_token_type: one('subject_token_type'),
      actor_token: one('actor_token'),
      actor_token_type: one('actor_token_type'),
      requested_token_type: one('requested_token_type'),
      audience: many('audience'),
      resource: many('resource'),
      scope: one('scope'),
    };
    return exchangeToken(ctx, req);
  }
  if (grantType === 'client_credentials') {
    const req: ClientCredentialsRequest = {
      authorization,
      client_id: one('client_id'),
      client_secret: one('client_secret'),
      client_assertion: one('client_assertion'),
      client_assertion_type: one('client_assertion_type'),
      scope: one('scope'),
    };
    return clientCredentials(ctx, req);
  }
  throw new OAuthError('unsupported_grant_type', `grant_type must be ${GRANT_TOKEN_EXCHANGE} or client_credentials`);
}
