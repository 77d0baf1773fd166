import { Type, type Static } from 'typebox';
import { Id, Literals, Nullable, PageQuery, Timestamp } from '../http/schemas.js';
import { OPTIONAL_BODY } from '../http/validation.js';
import type { Act } from './claims.js';
import { Conditions } from './conditions.js';
import { SVID_DEFAULT_TTL_S, SVID_MAX_TTL_S } from './svid.js';

export const AgentParams = Type.Object({ agentId: Id });
export const KeyParams = Type.Object({ agentId: Id, keyId: Type.String({ minLength: 1, maxLength: 128 }) });
export const PolicyParams = Type.Object({ id: Id });

const AudienceValue = Type.String({ minLength: 1, maxLength: 2048 });

export const SvidBody = Type.Object(
  {
    audience: Type.Union([AudienceValue, Type.Array(AudienceValue, { minItems: 1, maxItems: 16 })], {
      description: 'who the SVID is for; to use it for token exchange, include the issuer or the token endpoint URL',
    }),
    ttlSeconds: Type.Integer({ minimum: 1, maximum: SVID_MAX_TTL_S, default: SVID_DEFAULT_TTL_S }),
  },
  { additionalProperties: false },
);
export type SvidBody = Static<typeof SvidBody>;

export const SvidResponse = Type.Object({
  svid: Type.String({ description: 'JWT-SVID (typ JWT, ES256)' }),
  spiffeId: Type.String(),
  expiresAt: Timestamp,
});

const Jwk = Type.Object({
  kty: Type.String(),
  crv: Type.String(),
  x: Type.String(),
  y: Type.String(),
  kid: Type.String(),
  use: Type.String(),
  alg: Type.Optional(Type.String()),
});

export const Jwks = Type.Object({ keys: Type.Array(Jwk) });

export const TrustBundle = Type.Object({
  keys: Type.Array(Jwk, { description: 'use "jwt-svid", no alg' }),
  spiffe_sequence: Type.Integer({ description: 'changes (upwards) whenever the keys change' }),
  spiffe_refresh_hint: Type.Integer({ description: 'seconds' }),
});

export const ClientMetadata = Type.Object({
  client_id: Type.String({ description: "this document's own URL" }),
  client_name: Type.String(),
  jwks_uri: Type.String(),
  grant_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.Literal('private_key_jwt'),
  token_endpoint_auth_signing_alg: Type.String(),
  spiffe_id: Type.String(),
  badge: Type.String({ description: "W3C VC 2.0 credential (vc+jwt) describing the agent's capabilities" }),
});

export const AgentKey = Type.Object({
  kid: Type.String(),
  status: Literals(['active', 'rotated', 'revoked', 'expired']),
  createdAt: Timestamp,
  rotatedAt: Nullable(Timestamp),
  expiresAt: Nullable(Timestamp),
  revokedAt: Nullable(Timestamp),
  publicJwk: Jwk,
});

export const RotateResponse = Type.Object({
  key: AgentKey,
  rotated: Type.Array(AgentKey, { description: 'the keys this rotation retired; published until their expiresAt' }),
  privateJwk: Type.Optional(
    Type.Unsafe<Record<string, unknown>>({
      type: 'object',
      additionalProperties: true,
      description: 'externally hosted agents only: the new private key (JWK), shown once',
    }),
  ),
});

// ---- OAuth ----

const Param = Type.String({ maxLength: 16_384 });
const Repeatable = Type.Union([Param, Type.Array(Param, { maxItems: 16 })]);

/** Documented for OpenAPI; unknown parameters are ignored (RFC 6749 3.2). */
export const TokenRequest = Type.Object(
  {
    grant_type: Param,
    subject_token: Type.Optional(Param),
    subject_token_type: Type.Optional(Param),
    actor_token: Type.Optional(Param),
    actor_token_type: Type.Optional(Param),
    requested_token_type: Type.Optional(Param),
    audience: Type.Optional(Repeatable),
    resource: Type.Optional(Repeatable),
    scope: Type.Optional(Param),
    client_id: Type.Optional(Param),
    client_secret: Type.Optional(Param),
    client_assertion: Type.Optional(Param),
    client_assertion_type: Type.Optional(Param),
  },
  { additionalProperties: true },
);

export const TokenResponse = Type.Object({
  access_token: Type.String(),
  issued_token_type: Type.Optional(Type.String({ description: 'token exchange only' })),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  scope: Type.String(),
});

export const OAuthErrorBody = Type.Object({ error: Type.String(), error_description: Type.String() }, { title: 'OAuth error (RFC 6749)' });

export const IntrospectRequest = Type.Object(
  { token: Type.Optional(Param), token_type_hint: Type.Optional(Param) },
  { additionalProperties: true },
);

export const IntrospectResponse = Type.Object(
  {
    active: Type.Boolean(),
    scope: Type.Optional(Type.String()),
    client_id: Type.Optional(Type.String()),
    sub: Type.Optional(Type.String()),
    aud: Type.Optional(Type.String()),
    iss: Type.Optional(Type.String()),
    exp: Type.Optional(Type.Integer()),
    iat: Type.Optional(Type.Integer()),
    jti: Type.Optional(Type.String()),
    token_type: Type.Optional(Type.String()),
    act: Type.Optional(
      Type.Unsafe<Act>({
        type: 'object',
        additionalProperties: true,
        description: 'delegation chain: { sub, act? }, current actor outermost',
      }),
    ),
    tenant_id: Type.Optional(Type.String({ description: 'the tenant the token belongs to' })),
  },
  {
    additionalProperties: true,
    description: 'active: false alone, or active: true with every claim of the token (spec 4.5 full claims) and token_type',
  },
);

// ---- ExtAuthZ ----

const ToolName = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$', description: 'tool name' });

export const AuthorizeBody = Type.Object(
  {
    token: Type.Optional(
      Type.String({ minLength: 1, maxLength: 16_384, description: 'the exchanged access token (or send it as Authorization: Bearer)' }),
    ),
    tool: ToolName,
    callee: Type.String({ minLength: 1, maxLength: 2048, description: 'the callee agent: id, SPIFFE ID or client ID URL' }),
  },
  { additionalProperties: false },
);
export type AuthorizeBody = Static<typeof AuthorizeBody>;

export const AuthorizeResponse = Type.Object({
  allowed: Type.Boolean(),
  reason: Literals([
    'token_invalid',
    'tool_not_in_scope',
    'policy_allow',
    'policy_deny',
    'no_policy_audit_allow',
    'no_policy_enforce_deny',
  ]),
  policyId: Type.Optional(Type.String({ description: 'the policy that decided' })),
  detail: Type.Optional(Type.String({ description: 'why the token is invalid' })),
});

// ---- TBAC ----

const AgentOrAny = Type.String({ minLength: 1, maxLength: 64, pattern: '^(\\*|[A-Za-z0-9_-]+)$', description: 'agent id, or * for any' });
const ToolOrAny = Type.String({ pattern: '^(\\*|[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127})$', description: 'tool name, or * for any' });
const Effect = Type.Union([Type.Literal('allow'), Type.Literal('deny')]);
export const Policy = Type.Object({
  id: Type.String(),
  callerAgentId: Type.String(),
  calleeAgentId: Type.String(),
  toolName: Type.String(),
  effect: Effect,
  description: Nullable(Type.String()),
  conditions: Nullable(Conditions),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const CreatePolicyBody = Type.Object(
  {
    callerAgentId: AgentOrAny,
    calleeAgentId: AgentOrAny,
    toolName: ToolOrAny,
    effect: Type.Optional(Effect),
    description: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
    conditions: Type.Optional(Nullable(Conditions)),
  },
  { additionalProperties: false },
);
export type CreatePolicyBody = Static<typeof CreatePolicyBody>;

export const UpdatePolicyBody = Type.Object(
  {
    effect: Type.Optional(Effect),
    description: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
    conditions: Type.Optional(Nullable(Conditions)),
  },
  { additionalProperties: false, [OPTIONAL_BODY]: true },
);
export type UpdatePolicyBody = Static<typeof UpdatePolicyBody>;

export const ListPoliciesQuery = Type.Object(
  {
    page: PageQuery.page,
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
    callerAgentId: Type.Optional(AgentOrAny),
    calleeAgentId: Type.Optional(AgentOrAny),
    toolName: Type.Optional(ToolOrAny),
  },
  { additionalProperties: false },
);

export const Mode = Type.Object(
  { mode: Type.Union([Type.Literal('audit'), Type.Literal('enforce')], { description: 'what happens when no policy matches' }) },
  { additionalProperties: false },
);
