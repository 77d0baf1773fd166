import { decodeJwt, errors, type JWTPayload, jwtVerify } from 'jose';
import { PERMISSIONS, isPermission, type Permission } from '../tenancy/permissions.js';
import { mintAccessToken } from './access-token.js';
import { clientIdUrl, parseAudience } from './audience.js';
import type { IdentityContext } from './context.js';
import { iso } from './key-material.js';
import { OAuthError } from './oauth-errors.js';
import { identitySuspended } from './standing.js';
import * as store from './store.js';
import { normalisedTyp, peekHeader } from './tokens.js';

/**
 * `client_credentials`: access tokens for the platform's own API (every authenticated endpoint takes
 * them like API keys). Two kinds of client:
 * - an API key: `client_id` = the key's id, `client_secret` = the key itself (`agk_...`) or just its
 *   secret part, sent with HTTP Basic or as form fields. Scope: permissions, a subset of the key's
 *   (default: all of them). Revoking the key deactivates its tokens.
 * - an agent, with `private_key_jwt` (RFC 7523): `client_assertion_type` =
 *   urn:ietf:params:oauth:client-assertion-type:jwt-bearer and `client_assertion` a JWT signed (ES256)
 *   by one of the agent's published keys: `iss` = `sub` = its client ID (client ID URL, SPIFFE ID or
 *   agent id), `aud` containing the token endpoint URL or the issuer, `exp` at most 1 hour ahead, a
 *   `jti` never used before. Scope: `agents:read`, `agents:write`, `skills:read` (default
 *   `agents:read`); the token reaches only that agent (http/auth.ts). Revoking the key that signed the
 *   assertion deactivates the token.
 */

const GRANT_CLIENT_CREDENTIALS = 'client_credentials';
const ASSERTION_TYPE_JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/**
 * What an agent may ask for with client_credentials, and what it gets by default. Its token is bound
 * to the agent (Principal.agentId): agents:write lets it run itself, not change anything else.
 */
const AGENT_CLIENT_PERMISSIONS: readonly Permission[] = ['agents:read', 'agents:write', 'skills:read'];
const AGENT_CLIENT_DEFAULT_PERMISSIONS: readonly Permission[] = ['agents:read'];
const MAX_ASSERTION_LIFETIME_S = 3600;

export interface ClientCredentialsRequest {
  authorization?: string;
  client_id?: string;
  client_secret?: string;
  client_assertion?: string;
  client_assertion_type?: string;
  scope?: string;
}

export interface ClientCredentialsResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

const invalidClient = (description: string, basic = false) =>
  new OAuthError('invalid_client', description, 401, { 'www-authenticate': basic ? 'Basic realm="agentry"' : 'Bearer' });

function parseBasic(header: string): { id: string; secret: string } | null {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  try {
    // RFC 6749 2.3.1: both parts are form-urlencoded before Basic encoding.
    const unform = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    return { id: unform(decoded.slice(0, colon)), secret: unform(decoded.slice(colon + 1)) };
  } catch {
    return null;
  }
}

function requestedPermissions(scope: string | undefined, allowed: readonly Permission[], fallback: readonly Permission[]): Permission[] {
  if (scope === undefined || scope.trim() === '') return [...fallback];
  const asked = [...new Set(scope.split(' ').filter(Boolean))];
  const unknown = asked.filter((s) => !isPermission(s));
  if (unknown.length)
    throw new OAuthError(
      'invalid_scope',
      `unknown scope ${unknown.join(' ').slice(0, 200)}; scopes are permissions: ${PERMISSIONS.join(' ')}`,
    );
  const beyond = asked.filter((s) => !allowed.includes(s as Permission));
  if (beyond.length) throw new OAuthError('insufficient_scope', `this client may not have ${beyond.join(' ')}`);
  return asked as Permission[];
}

const uuidHex = (id: string) => id.replace(/-/g, '').toLowerCase();

export async function clientCredentials(ctx: IdentityContext, req: ClientCredentialsRequest): Promise<ClientCredentialsResponse> {
  const basic = req.authorization ? parseBasic(req.authorization) : null;
  if (req.authorization && !basic) throw invalidClient('the Authorization header must be HTTP Basic client_id:client_secret', true);
  const methods = [basic, req.client_secret !== undefined, req.client_assertion !== undefined].filter(Boolean).length;
  if (methods > 1) throw new OAuthError('invalid_request', 'use exactly one client authentication method');
  if (methods === 0) throw invalidClient('client authentication is required (HTTP Basic, client_secret or private_key_jwt)');

  if (req.client_assertion !== undefined) return agentClient(ctx, req);

  const id = basic ? basic.id : req.client_id;
  const secret = basic ? basic.secret : req.client_secret!;
  if (!id) throw invalidClient('client_id is required', Boolean(basic));
  if (basic && req.client_id !== undefined && req.client_id !== basic.id)
    throw new OAuthError('invalid_request', 'client_id differs from the HTTP Basic user');
  // The secret may be the whole API key or its secret part; the key's id must be client_id. The
  // secret itself is compared in constant time by the API key check.
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id))
    throw invalidClient('the client credentials are invalid', Boolean(basic));
  const presented = secret.startsWith('agk_') ? secret : `agk_${uuidHex(id)}_${secret}`;
  const principal = await ctx.tenancy.authenticateApiKey(presented);
  if (!principal || principal.actor.id !== id.toLowerCase()) throw invalidClient('the client credentials are invalid', Boolean(basic));
  const keyId = id.toLowerCase();
  const permissions = requestedPermissions(req.scope, [...principal.permissions], [...principal.permissions]);

  const { token, claims } = await mintAccessToken(ctx, {
    kind: 'client_credentials',
    tenantId: principal.tenantId,
    sub: keyId,
    aud: ctx.apiAudience,
    clientId: keyId,
    scope: permissions,
    apiKeyId: keyId,
    audit: (claims) => ({
      tenantId: principal.tenantId,
      actor: principal.actor,
      action: 'identity.access_token_issued',
      resourceType: 'api_key',
      resourceId: keyId,
      detail: { jti: claims.jti, scope: claims.scope, grantType: GRANT_CLIENT_CREDENTIALS },
    }),
  });
  return { access_token: token, token_type: 'Bearer', expires_in: claims.exp - claims.iat, scope: claims.scope };
}

async function agentClient(ctx: IdentityContext, req: ClientCredentialsRequest): Promise<ClientCredentialsResponse> {
  if (req.client_assertion_type !== ASSERTION_TYPE_JWT_BEARER) {
    throw new OAuthError('invalid_request', `client_assertion_type must be ${ASSERTION_TYPE_JWT_BEARER}`);
  }
  const assertion = req.client_assertion!;
  const header = peekHeader(assertion);
  if (!header) throw invalidClient('client_assertion is not a JWT');
  const typ = normalisedTyp(header);
  if (typ !== undefined && typ !== 'jwt' && typ !== 'client-authentication+jwt')
    throw invalidClient(`client_assertion typ ${typ} is not accepted`);
  if (header.alg !== 'ES256' || typeof header.kid !== 'string')
    throw invalidClient('client_assertion must be ES256 with the kid of an agent key');

  let iss: unknown;
  try {
    iss = decodeJwt(assertion).iss;
  } catch {
    throw invalidClient('client_assertion is malformed');
  }
  if (typeof iss !== 'string') throw invalidClient('client_assertion has no iss');
  if (req.client_id !== undefined && req.client_id !== iss) throw invalidClient('client_id differs from the assertion issuer');
  const ref = parseAudience(iss, ctx.trustDomain, ctx.publicBaseUrl);
  const agent = ref ? await ctx.agents.identityAnyTenant(ref.agentId) : undefined;
  if (!ref || !agent || (ref.tenantId !== undefined && ref.tenantId !== agent.tenant_id)) throw invalidClient('the client is unknown');
  if (identitySuspended(agent)) throw invalidClient('the identity of this agent is suspended (paused)');
  const key = await ctx.agentKeys.verificationKey(agent.tenant_id, agent.id, header.kid);
  if (!key) throw invalidClient('client_assertion is not signed by a published key of this agent');

  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(assertion, key.key, {
      algorithms: ['ES256'],
      issuer: iss,
      subject: iss,
      audience: [ctx.tokenEndpoint, ctx.issuer],
      requiredClaims: ['exp', 'jti'],
      currentDate: new Date(ctx.clock.now()),
    }));
  } catch (err) {
    const why =
      err instanceof errors.JWTExpired
        ? 'has expired'
        : err instanceof errors.JWTClaimValidationFailed
          ? `has a bad ${err.claim} claim`
          : 'does not verify';
    throw invalidClient(`client_assertion ${why}`);
  }
  const nowS = Math.floor(ctx.clock.now() / 1000);
  if ((payload.exp as number) > nowS + MAX_ASSERTION_LIFETIME_S + 60) throw invalidClient('client_assertion lives longer than 1 hour');
  const jti = String(payload.jti).slice(0, 64);
  // Replay protection: each assertion jti is accepted once per agent (remembered until it expires).
  const fresh = await store.insertAssertionIfAbsent(ctx.db.kysely, {
    jti: `assertion:${agent.id}:${jti}`,
    tenant_id: agent.tenant_id,
    kind: 'assertion',
    agent_id: agent.id,
    client_id: iss,
    api_key_id: null,
    agent_key_id: key.row.kid,
    parent_jti: null,
    issued_at: iso(ctx.clock.now()),
    expires_at: iso((payload.exp as number) * 1000),
    revoked_at: null,
  });
  if (!fresh) throw invalidClient('client_assertion was used before (replay)');

  const permissions = requestedPermissions(req.scope, AGENT_CLIENT_PERMISSIONS, AGENT_CLIENT_DEFAULT_PERMISSIONS);
  const clientId = clientIdUrl(ctx.publicBaseUrl, agent.id);
  const { token, claims } = await mintAccessToken(ctx, {
    kind: 'client_credentials',
    tenantId: agent.tenant_id,
    sub: ctx.spiffeIdOf(agent.tenant_id, agent.id),
    aud: ctx.apiAudience,
    clientId,
    scope: permissions,
    agentId: agent.id,
    agentKeyId: key.row.kid,
    audit: (claims) => ({
      tenantId: agent.tenant_id,
      actor: { type: 'agent', id: agent.id },
      action: 'identity.access_token_issued',
      resourceType: 'agent',
      resourceId: agent.id,
      detail: { jti: claims.jti, scope: claims.scope, grantType: GRANT_CLIENT_CREDENTIALS, kid: key.row.kid },
    }),
  });
  return { access_token: token, token_type: 'Bearer', expires_in: claims.exp - claims.iat, scope: claims.scope };
}
