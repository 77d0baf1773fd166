import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import { bearerToken } from '../http/auth.js';
import { DomainError } from '../errors.js';
import { isDatabaseUnavailable, ProblemError, problemOf } from '../http/errors.js';
import { problems } from '../http/schemas.js';
import { registerFormParser } from './form.js';
import { OAuthError } from './oauth-errors.js';
import {
  AgentKey,
  AgentParams,
  AuthorizeBody,
  AuthorizeResponse,
  ClientMetadata,
  CreatePolicyBody,
  IntrospectRequest,
  IntrospectResponse,
  Jwks,
  KeyParams,
  ListPoliciesQuery,
  Mode,
  OAuthErrorBody,
  Policy,
  PolicyParams,
  RotateResponse,
  SvidBody,
  SvidResponse,
  TokenRequest,
  TokenResponse,
  TrustBundle,
  UpdatePolicyBody,
} from './schemas.js';
import type { IdentityService } from './service.js';
import type { LimitsService } from '../tenancy/limits.js';

const tags = ['identity'];
const tbacTags = ['tbac'];
const FORM_OR_JSON = ['application/x-www-form-urlencoded', 'application/json'];

const CACHE = {
  platformJwks: 'public, max-age=3600',
  trustBundle: 'public, max-age=300',
  clientMetadata: 'public, max-age=300',
  agentJwks: 'public, max-age=60',
} as const;

export const identityRoutes: FastifyPluginAsyncTypebox<{ identity: IdentityService; limits: LimitsService }> = async (
  app,
  { identity, limits },
) => {
  // ---- public documents ----

  app.get(
    '/api/v1/identity/agents/:agentId/client-metadata.json',
    {
      config: { public: true },
      schema: {
        operationId: 'getAgentClientMetadata',
        tags,
        summary: 'Client ID Metadata Document of an agent (client_id = this URL), with its SPIFFE ID and signed badge',
        description: 'A paused registered agent has its identity suspended: 409 agent_suspended (no new badge) until it is resumed.',
        params: AgentParams,
        response: { 200: ClientMetadata, ...problems(404, 409) },
      },
    },
    async (req, reply) => {
      reply.header('cache-control', CACHE.clientMetadata);
      return identity.clientMetadata(req.params.agentId);
    },
  );

  app.get(
    '/api/v1/identity/agents/:agentId/jwks.json',
    {
      config: { public: true },
      schema: {
        operationId: 'getAgentJwks',
        tags,
        summary: "The agent's public keys (EC P-256): active and recently rotated",
        params: AgentParams,
        response: { 200: Jwks, ...problems(404) },
      },
    },
    async (req, reply) => {
      reply.header('cache-control', CACHE.agentJwks);
      return identity.agentJwks(req.params.agentId);
    },
  );

  app.get(
    '/api/v1/identity/.well-known/jwks.json',
    {
      config: { public: true },
      schema: {
        operationId: 'getPlatformJwks',
        tags,
        summary: 'Platform JWKS: verifies SVIDs, badges and access tokens',
        response: { 200: Jwks },
      },
    },
    async (_req, reply) => {
      reply.header('cache-control', CACHE.platformJwks);
      return identity.platformJwks();
    },
  );

  // RFC 8414: the well-known path of an issuer with a path ends with that path.
  const issuerPath = new URL(identity.issuer).pathname.replace(/\/+$/, '');
  app.get(
    `/.well-known/oauth-authorization-server${issuerPath}`,
    {
      config: { public: true },
      schema: {
        operationId: 'getAuthorizationServerMetadata',
        tags,
        summary: 'OAuth 2.0 authorization server metadata (RFC 8414): the token endpoint, its grants and client authentication',
        description:
          'What a client (an MCP client following an endpoint’s protected resource metadata) needs to get an access token: client_credentials with an API key’s id and secret, or token exchange. There is no authorization endpoint: no grant sends a person through one.',
        response: { 200: Type.Object({ issuer: Type.String(), token_endpoint: Type.String() }, { additionalProperties: true }) },
      },
    },
    async (_req, reply) => {
      reply.header('cache-control', 'public, max-age=3600');
      return identity.authorizationServerMetadata();
    },
  );

  app.get(
    '/.well-known/spiffe/trust-bundle',
    {
      config: { public: true },
      schema: {
        operationId: 'getSpiffeTrustBundle',
        tags,
        summary: 'SPIFFE trust bundle of the trust domain (JWT-SVID keys)',
        response: { 200: TrustBundle },
      },
    },
    async (_req, reply) => {
      reply.header('cache-control', CACHE.trustBundle);
      return identity.trustBundle();
    },
  );

  // ---- SVIDs and agent keys ----

  app.post(
    '/api/v1/identity/agents/:agentId/svid',
    {
      // An agent's own token gets its own SVIDs: delegation through token exchange.
      config: { permission: 'agents:write', agentScope: { param: 'agentId' } },
      schema: {
        operationId: 'issueAgentSvid',
        tags,
        summary: 'Issue a JWT-SVID for an agent',
        description: 'A paused registered agent has its identity suspended: 409 agent_suspended until it is resumed.',
        params: AgentParams,
        body: SvidBody,
        response: { 200: SvidResponse, ...problems(400, 401, 403, 404, 409, 415) },
      },
    },
    async (req) => identity.issueSvid(req.principal, req.params.agentId, [req.body.audience].flat(), req.body.ttlSeconds),
  );

  app.get(
    '/api/v1/identity/agents/:agentId/keys',
    {
      config: { permission: 'agents:read', agentScope: { param: 'agentId' } },
      schema: {
        operationId: 'listAgentKeys',
        tags,
        summary: "The agent's keys, newest first, with their status (never private parts)",
        params: AgentParams,
        response: { 200: Type.Object({ keys: Type.Array(AgentKey) }), ...problems(401, 403, 404) },
      },
    },
    async (req) => identity.listAgentKeys(req.principal, req.params.agentId),
  );

  app.post(
    '/api/v1/identity/agents/:agentId/keys/rotate',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'rotateAgentKey',
        tags,
        summary: "Rotate the agent's key: a new EC P-256 key; the old one is marked rotated (published 24 h more)",
        params: AgentParams,
        response: { 201: RotateResponse, ...problems(401, 403, 404, 409) },
      },
    },
    // An externally hosted agent's new private key is in this response alone: no cache may keep it.
    async (req, reply) =>
      reply
        .code(201)
        .header('cache-control', 'no-store')
        .send(await identity.rotateAgentKey(req.principal, req.params.agentId)),
  );

  app.delete(
    '/api/v1/identity/agents/:agentId/keys/:keyId',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'revokeAgentKey',
        tags,
        summary: "Revoke one of the agent's keys: it leaves the JWKS at once, and tokens bound to it stop working",
        params: KeyParams,
        response: { 204: Type.Null(), ...problems(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await identity.revokeAgentKey(req.principal, req.params.agentId, req.params.keyId);
      return reply.code(204).send(null);
    },
  );

  // ---- ExtAuthZ ----

  app.post(
    '/api/v1/identity/authorize',
    {
      config: { public: true },
      schema: {
        operationId: 'authorizeToolCall',
        tags,
        summary: 'ExtAuthZ: may the bearer of this delegation token call this tool of this agent? (200 even for bad tokens)',
        body: AuthorizeBody,
        response: { 200: AuthorizeResponse, ...problems(400, 415) },
      },
    },
    async (req) => identity.authorize(req.body.token ?? bearerToken(req.headers.authorization), req.body.tool, req.body.callee),
  );

  // ---- TBAC ----

  app.get(
    '/api/v1/identity/tbac/policies',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'listTbacPolicies',
        tags: tbacTags,
        summary: 'List TBAC policies, newest first',
        querystring: ListPoliciesQuery,
        response: {
          200: Type.Object({ policies: Type.Array(Policy), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => {
      const { page, limit, ...filter } = req.query;
      return identity.policies.list(req.principal.tenantId, filter, page, limit);
    },
  );

  app.post(
    '/api/v1/identity/tbac/policies',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'createTbacPolicy',
        tags: tbacTags,
        summary: 'Create a TBAC policy (one per caller, callee, tool)',
        body: CreatePolicyBody,
        response: { 201: Policy, ...problems(400, 401, 403, 409, 415) },
      },
    },
    async (req, reply) => reply.code(201).send(await identity.policies.create(req.principal, req.body)),
  );

  app.patch(
    '/api/v1/identity/tbac/policies/:id',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'updateTbacPolicy',
        tags: tbacTags,
        summary: "Change a policy's effect, description or conditions (null clears)",
        params: PolicyParams,
        body: UpdatePolicyBody,
        response: { 200: Policy, ...problems(400, 401, 403, 404, 415) },
      },
    },
    async (req) => identity.policies.update(req.principal, req.params.id, req.body ?? {}),
  );

  app.delete(
    '/api/v1/identity/tbac/policies/:id',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'deleteTbacPolicy',
        tags: tbacTags,
        summary: 'Delete a policy',
        params: PolicyParams,
        response: { 204: Type.Null(), ...problems(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await identity.policies.delete(req.principal, req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/v1/identity/tbac/mode',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'getTbacMode',
        tags: tbacTags,
        summary: 'What decides when no policy matches: audit (allow, default) or enforce (deny)',
        response: { 200: Mode, ...problems(401, 403) },
      },
    },
    async (req) => ({ mode: await identity.policies.mode(req.principal.tenantId) }),
  );

  app.put(
    '/api/v1/identity/tbac/mode',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'setTbacMode',
        tags: tbacTags,
        summary: "Set the tenant's TBAC mode",
        body: Mode,
        response: { 200: Mode, ...problems(400, 401, 403, 415) },
      },
    },
    async (req) => ({ mode: await identity.policies.setMode(req.principal, req.body.mode) }),
  );

  await app.register(oauthRoutes, { identity, limits });
};

/** A claim of a JWT read without verifying it (only to name who is asking), or undefined. */
function unverifiedClaim(token: unknown, claim: 'iss' | 'sub'): string | undefined {
  if (typeof token !== 'string') return undefined;
  try {
    const value = decodeJwt(token)[claim];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The client a token request names, for its rate limit: the HTTP Basic user, `client_id`, the client
 * assertion's issuer, or for a token exchange the actor's (else the subject's) `sub`; else the address.
 */
function tokenClient(req: FastifyRequest): string {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.headers.authorization ?? '');
  if (basic) {
    const user = Buffer.from(basic[1], 'base64').toString('utf8').split(':')[0];
    if (user) return `client:${user.toLowerCase()}`;
  }
  if (typeof body.client_id === 'string' && body.client_id) return `client:${body.client_id.toLowerCase()}`;
  const named =
    unverifiedClaim(body.client_assertion, 'iss') ?? unverifiedClaim(body.actor_token, 'sub') ?? unverifiedClaim(body.subject_token, 'sub');
  return named ? `client:${named}` : `address:${req.ip}`;
}

/** Maps any error on the OAuth endpoints to an RFC 6749 body. */
function oauthErrorOf(err: FastifyError | Error): OAuthError {
  if (err instanceof OAuthError) return err;
  // A domain error answers here as it would elsewhere in the API, then in RFC 6749's words.
  if (err instanceof DomainError) return oauthErrorOf(problemOf(err));
  // An outage is not a server error here either (the rest of the API answers 503 database_unavailable).
  if (isDatabaseUnavailable(err) || (err instanceof ProblemError && err.code === 'database_unavailable')) {
    return new OAuthError('temporarily_unavailable', 'the database cannot be reached; retry shortly', 503, { 'retry-after': '5' });
  }
  if (err instanceof ProblemError) {
    if (err.status === 401) return new OAuthError('invalid_client', err.detail, 401, { 'www-authenticate': 'Bearer' });
    if (err.status === 403) return new OAuthError('insufficient_scope', err.detail, 403);
    if (err.status < 500) return new OAuthError('invalid_request', err.detail);
  }
  const status = (err as FastifyError).statusCode;
  if (status && status >= 400 && status < 500) {
    const what =
      status === 415
        ? 'send the body as application/x-www-form-urlencoded or application/json'
        : status === 413
          ? 'the body is too large'
          : 'the request body could not be read';
    return new OAuthError('invalid_request', what);
  }
  return new OAuthError('server_error', 'an internal error occurred; it has been logged');
}

/** Token and introspection: form-encoded or JSON bodies, RFC 6749 errors, never cached. */
const oauthRoutes: FastifyPluginAsyncTypebox<{ identity: IdentityService; limits: LimitsService }> = async (app, { identity, limits }) => {
  registerFormParser(app); // this plugin only: the rest of the API takes JSON alone
  app.addHook('onSend', async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    reply.header('pragma', 'no-cache');
  });
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const oauth = oauthErrorOf(err);
    if (oauth.status >= 500) request.log.error({ err }, 'oauth request failed');
    else request.log.info({ error: oauth.error, status: oauth.status }, 'oauth request rejected');
    return reply.code(oauth.status).headers(oauth.headers).type('application/json').send(oauth.body());
  });
  const invalidRequest = (req: FastifyRequest) => {
    if (!req.validationError) return;
    const first = req.validationError.validation?.[0];
    const where = first
      ? `${first.instancePath.replace(/^\//, '') || 'body'} ${first.message ?? 'is invalid'}`
      : 'the request is malformed';
    throw new OAuthError('invalid_request', where);
  };

  // RFC 8414 and the clients that read it (the MCP SDK) require an authorization endpoint; this one
  // answers every request with why there is none to go through, rather than a 404 or a login page.
  app.get(
    '/api/v1/identity/oauth/authorize',
    {
      config: { public: true },
      schema: {
        operationId: 'authorizeInteractive',
        tags,
        summary: 'OAuth authorization endpoint: always 400 unsupported_response_type (there is no interactive grant)',
        description:
          'Tokens come from the token endpoint only (client_credentials with an API key, token exchange); the metadata says response_types_supported: []. Nothing is redirected.',
        response: { 400: OAuthErrorBody },
      },
    },
    async (_req, reply) =>
      reply.code(400).send({
        error: 'unsupported_response_type',
        error_description:
          'this server has no interactive authorization: get a token at the token endpoint with client_credentials (an API key) or token exchange',
      }),
  );

  app.post(
    '/api/v1/identity/oauth/token',
    {
      config: { public: true },
      attachValidation: true,
      schema: {
        operationId: 'requestToken',
        tags,
        summary: 'OAuth token endpoint: token exchange (RFC 8693; the SVID authenticates) and client_credentials',
        consumes: FORM_OR_JSON,
        body: TokenRequest,
        description:
          'Rate limited (TOKEN_RATE_LIMIT_PER_MINUTE): tokens issued per client, and failed requests per client and address apart, so forged requests do not stop the real client; 429 slow_down with Retry-After.',
        response: {
          200: TokenResponse,
          400: OAuthErrorBody,
          401: OAuthErrorBody,
          429: OAuthErrorBody,
          500: OAuthErrorBody,
          503: OAuthErrorBody,
        },
      },
    },
    async (req, reply) => {
      const admission = limits.admitTokenRequest(tokenClient(req), req.ip);
      if (admission) {
        const rate = admission.decision;
        reply
          .header('ratelimit-limit', rate.limit)
          .header('ratelimit-remaining', rate.remaining)
          .header('ratelimit-reset', rate.resetSeconds);
        if (!rate.allowed) {
          const detail =
            admission.why === 'failures'
              ? 'too many failed token requests for this client from this address; retry later'
              : `this client may request ${rate.limit} tokens per minute`;
          throw new OAuthError('slow_down', detail, 429, { 'retry-after': String(rate.retryAfter) });
        }
      }
      try {
        invalidRequest(req);
        const answer = await identity.token(req.body as Record<string, string | string[] | undefined>, req.headers.authorization);
        admission?.settle('issued');
        return answer;
      } catch (err) {
        // Refused for what the request holds (4xx) counts as a failure; a server error is not the client's doing.
        admission?.settle(oauthErrorOf(err as Error).status < 500 ? 'failed' : 'error');
        throw err;
      }
    },
  );

  app.post(
    '/api/v1/identity/oauth/introspect',
    {
      config: { permission: 'agents:read' },
      attachValidation: true,
      schema: {
        operationId: 'introspectToken',
        tags,
        summary: 'Token introspection (RFC 7662): always 200; active false for invalid, expired, revoked or foreign tokens',
        consumes: FORM_OR_JSON,
        body: IntrospectRequest,
        response: { 200: IntrospectResponse, 400: OAuthErrorBody, 401: OAuthErrorBody, 403: OAuthErrorBody, 503: OAuthErrorBody },
      },
    },
    async (req) => {
      invalidRequest(req);
      const token = req.body.token;
      if (token === undefined) throw new OAuthError('invalid_request', 'token is required');
      if (Array.isArray(token)) throw new OAuthError('invalid_request', 'token must not repeat');
      return identity.introspect(req.principal, token);
    },
  );
};
