import { SignJWT } from 'jose';
import type { AgentIdentity, AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import { Conflict, NotFound, Unauthenticated } from '../errors.js';
import type { Kysely } from 'kysely';
import type { BaseLogger } from 'pino';
import type { Database } from '../db/schema.js';
import { newId } from '../ids.js';
import type { MaybePromise } from '../maybe-promise.js';
import { recordAudit } from '../tenancy/audit.js';
import { isPermission, type Permission, type Principal } from '../tenancy/permissions.js';
import type { TenancyService } from '../tenancy/service.js';
import { verifyAccessToken } from './access-token.js';
import type { TokenState, VerifiedToken } from './claims.js';
import { agentJwksUrl, clientIdUrl } from './audience.js';
import { AuditBuffer } from './audit-buffer.js';
import { authorize, type AuthorizeResult } from './authorize.js';
import { BadgeSigner } from './badges.js';
import { DECISION_CACHE_MS, TtlCache } from './cache.js';
import { clientCredentials, type ClientCredentialsRequest } from './client-credentials.js';
import type { IdentityContext } from './context.js';
import { GRANT_TOKEN_EXCHANGE, exchangeToken, type ExchangeRequest } from './exchange.js';
import { introspect } from './introspect.js';
import { AgentKeyring, publishedJwk } from './agent-keys.js';
import { DEFAULT_PLATFORM_ACTIVATION_DELAY_S, PLATFORM_KEY_CACHE_MS, iso, type Clock } from './key-material.js';
import { PlatformKeyring } from './platform-keys.js';
import { loadMasterKey, type MasterKeySource } from './master-key.js';
import { OAuthError } from './oauth-errors.js';
import { PolicyEngine } from './policies.js';
import { agentSpiffeId, parseAgentSpiffeId } from './spiffe.js';
import { AgentStandings, identitySuspended } from './standing.js';
import * as store from './store.js';
import { issueSvid } from './svid.js';
import { PlatformTokens, TYP, TokenError, looksLikeJwt, peekHeader, normalisedTyp } from './tokens.js';

export const TRUST_BUNDLE_REFRESH_HINT_S = 300;
/** The client metadata document stays below this size (IETF Client ID Metadata Document draft). */
export const METADATA_MAX_BYTES = 5 * 1024;
/** Token rows are kept this long after they expire, then pruned. */
const TOKEN_RETENTION_MS = 24 * 3600 * 1000;

const GRANT_TYPES = [GRANT_TOKEN_EXCHANGE, 'client_credentials'];

/** A skill an agent may use now, as its badge lists it. */
export interface SkillCapability {
  id: string;
  name: string;
  /** The `version` the skill's metadata declares, or null. */
  version: string | null;
}

/** The skills an agent may use now (assigned, enabled, active); the skills domain provides them. */
export type SkillCapabilities = (tenantId: string, agentId: string) => Promise<readonly SkillCapability[]>;

/** The settings identity needs (config.ts's Config has them), so identity does not depend on config.ts. */
export interface IdentityConfig extends MasterKeySource {
  issuer: string;
  trustDomain: string;
  publicBaseUrl: string;
}

/**
 * Agent identity: keys, identity documents, SVIDs, badges, token exchange, introspection, the
 * ExtAuthZ decision and TBAC policies. Routes call it over HTTP; a runtime can call `exchange`,
 * `authorize`, `issueSvid` and `signClientAssertion` in-process.
 */
export class IdentityService {
  readonly clock: Clock = { now: () => Date.now() };
  readonly platformKeys: PlatformKeyring;
  readonly agentKeys: AgentKeyring;
  readonly policies: PolicyEngine;
  readonly auditBuffer: AuditBuffer;
  readonly ctx: IdentityContext;
  private readonly badges: BadgeSigner;
  private skillCapabilities: SkillCapabilities = async () => [];
  private lastPrune = 0;

  constructor(
    private readonly db: Db,
    config: IdentityConfig,
    tenancy: TenancyService,
    private readonly agents: AgentsService,
    /** Where failures of background upkeep (pruning expired tokens) are reported. */
    private readonly log?: Pick<BaseLogger, 'warn'>,
  ) {
    const masterKey = loadMasterKey(config);
    this.platformKeys = new PlatformKeyring(db, masterKey, this.clock);
    this.agentKeys = new AgentKeyring(db, masterKey, this.clock);
    this.policies = new PolicyEngine(db, tenancy, agents);
    this.auditBuffer = new AuditBuffer(db);
    const trustDomain = config.trustDomain;
    this.ctx = {
      db,
      issuer: config.issuer,
      trustDomain,
      publicBaseUrl: config.publicBaseUrl,
      tokenEndpoint: `${config.publicBaseUrl}/api/v1/identity/oauth/token`,
      apiAudience: `${config.publicBaseUrl}/api/v1`,
      clock: this.clock,
      platformKeys: this.platformKeys,
      agentKeys: this.agentKeys,
      tokens: new PlatformTokens(this.platformKeys, config.issuer, this.clock),
      tenancy,
      policies: this.policies,
      audit: this.auditBuffer,
      agents,
      standings: new AgentStandings(db, agents),
      spiffeIdOf: (tenantId, agentId) => agentSpiffeId(trustDomain, tenantId, agentId),
      hot: { verified: new TtlCache<VerifiedToken>(PLATFORM_KEY_CACHE_MS), tokenStates: new TtlCache<TokenState | null>(DECISION_CACHE_MS) },
    };
    this.badges = new BadgeSigner(this.ctx);
  }

  get issuer() {
    return this.ctx.issuer;
  }
  get tokenEndpoint() {
    return this.ctx.tokenEndpoint;
  }
  get apiAudience() {
    return this.ctx.apiAudience;
  }

  /** Writes queued audit events (authorization decisions); called when the app closes. */
  flush(): Promise<void> {
    return this.auditBuffer.flush();
  }

  // ---- agents ----

  private async publicAgent(agentId: string) {
    const agent = await this.agents.identityAnyTenant(agentId);
    if (!agent) throw new NotFound('agent');
    return agent;
  }

  private async tenantAgent(tenantId: string, agentId: string) {
    return this.agents.getRow(tenantId, agentId);
  }

  /** No new SVIDs or badges for an agent whose identity is suspended (a registered agent paused). */
  private notSuspended(agent: AgentIdentity) {
    if (identitySuspended(agent)) throw new Conflict('agent_suspended', 'the agent is paused: its identity is suspended until it is resumed');
    return agent;
  }

  /** Connects the skills domain: badges list the skills each agent may use. */
  useSkillCapabilities(capabilities: SkillCapabilities) {
    this.skillCapabilities = capabilities;
  }

  /**
   * Deleting an agent (a delete hook, inside its transaction): its keys are revoked, and with them
   * every SVID and token bound to them; the tokens it was issued or acts in are marked revoked down
   * the chain. Tokens that merely name it (as audience or subject) stop at their next use: every
   * verification checks the agents a token names (standing.ts).
   */
  readonly forgetAgent = async (trx: Kysely<Database>, tenantId: string, agentId: string) => {
    const at = iso(this.clock.now());
    await store.revokeAgentKeys(trx, tenantId, agentId, at);
    let frontier = await store.activeTokensOfAgent(trx, tenantId, agentId);
    for (let depth = 0; frontier.length && depth < 12; depth++) {
      await store.revokeTokens(trx, tenantId, frontier, at);
      frontier = await store.activeChildTokens(trx, tenantId, frontier);
    }
    this.ctx.hot.tokenStates.clear();
  };

  // ---- public documents ----

  /** The badge of an agent with the skills it may use (badges.ts signs and keeps it). */
  private async badge(agent: AgentIdentity, compact: boolean): Promise<string> {
    const skills = (await this.skillCapabilities(agent.tenant_id, agent.id)).map(({ id, name, version }) => ({ id, name, version }));
    return this.badges.badge(agent, skills, compact);
  }

  async clientMetadata(agentId: string) {
    const agent = this.notSuspended(await this.publicAgent(agentId));
    await this.agentKeys.ensureActive(agent.tenant_id, agent.id);
    const build = async (compact: boolean) => ({
      client_id: clientIdUrl(this.ctx.publicBaseUrl, agent.id),
      client_name: agent.name,
      jwks_uri: agentJwksUrl(this.ctx.publicBaseUrl, agent.id),
      grant_types: GRANT_TYPES,
      token_endpoint_auth_method: 'private_key_jwt' as const,
      token_endpoint_auth_signing_alg: 'ES256',
      spiffe_id: this.ctx.spiffeIdOf(agent.tenant_id, agent.id),
      badge: await this.badge(agent, compact),
    });
    const doc = await build(false);
    return Buffer.byteLength(JSON.stringify(doc)) < METADATA_MAX_BYTES - 256 ? doc : build(true);
  }

  async agentJwks(agentId: string) {
    const agent = await this.publicAgent(agentId);
    const keys = await this.agentKeys.published(agent.tenant_id, agent.id);
    return { keys: keys.map(publishedJwk) };
  }

  async platformJwks() {
    const { published } = await this.platformKeys.snapshot();
    return { keys: published.map((row) => publishedJwk(row)) };
  }

  /** SPIFFE bundle: a JWKS of `jwt-svid` keys (no `alg`), with sequence and refresh hint. */
  async trustBundle() {
    const { published, sequence } = await this.platformKeys.snapshot();
    return {
      keys: published.map((row) => {
        const { kty, crv, x, y, kid } = publishedJwk(row);
        return { kty, crv, x, y, kid, use: 'jwt-svid' as const };
      }),
      spiffe_sequence: sequence,
      spiffe_refresh_hint: TRUST_BUNDLE_REFRESH_HINT_S,
    };
  }

  // ---- SVIDs and agent keys ----

  async issueSvid(principal: Principal, agentId: string, audience: string[], ttlSeconds: number) {
    this.notSuspended(await this.tenantAgent(principal.tenantId, agentId));
    const svid = await issueSvid(this.ctx, principal.tenantId, agentId, audience, ttlSeconds);
    await recordAudit(this.db.kysely, {
      tenantId: principal.tenantId,
      actor: principal.actor,
      action: 'identity.svid_issued',
      resourceType: 'agent',
      resourceId: agentId,
      detail: { jti: svid.jti, audience, ttlSeconds },
    });
    this.maybePrune();
    return { svid: svid.svid, spiffeId: svid.spiffeId, expiresAt: svid.expiresAt };
  }

  async listAgentKeys(principal: Principal, agentId: string) {
    await this.tenantAgent(principal.tenantId, agentId);
    const rows = await this.agentKeys.list(principal.tenantId, agentId);
    return { keys: rows.map((r) => this.agentKeys.view(r)) };
  }

  async rotateAgentKey(principal: Principal, agentId: string) {
    const agent = await this.tenantAgent(principal.tenantId, agentId);
    const { key, privateJwk, previous } = await this.agentKeys.rotate(principal.tenantId, agentId);
    await recordAudit(this.db.kysely, {
      tenantId: principal.tenantId,
      actor: principal.actor,
      action: 'identity.agent_key_rotated',
      resourceType: 'agent',
      resourceId: agentId,
      detail: { kid: key.kid, rotated: previous.map((p) => p.kid) },
    });
    return {
      key: this.agentKeys.view(key),
      rotated: previous.map((p) => this.agentKeys.view(p)),
      // An externally hosted agent signs its client assertions itself: it gets its private key, once.
      ...(agent.hosting === 'external' ? { privateJwk: { ...privateJwk, kid: key.kid, alg: 'ES256' } } : {}),
    };
  }

  async revokeAgentKey(principal: Principal, agentId: string, kid: string) {
    await this.tenantAgent(principal.tenantId, agentId);
    const result = await this.agentKeys.revoke(principal.tenantId, agentId, kid);
    if (!result) throw new NotFound('key');
    if (!result.changed) return;
    const at = iso(this.clock.now());
    const revokedTokens = await this.revokeTokensOfAgentKey(principal.tenantId, kid, at);
    this.ctx.hot.tokenStates.clear();
    await recordAudit(this.db.kysely, {
      tenantId: principal.tenantId,
      actor: principal.actor,
      action: 'identity.agent_key_revoked',
      resourceType: 'agent',
      resourceId: agentId,
      detail: { kid, revokedTokens },
    });
  }

  /** Marks the tokens bound to a key revoked, and every token exchanged from them, down the chain. */
  private async revokeTokensOfAgentKey(tenantId: string, kid: string, at: string): Promise<number> {
    let frontier = await store.activeTokensOfAgentKey(this.db.kysely, tenantId, kid);
    let total = 0;
    for (let depth = 0; frontier.length && depth < 12; depth++) {
      await store.revokeTokens(this.db.kysely, tenantId, frontier, at);
      total += frontier.length;
      frontier = await store.activeChildTokens(this.db.kysely, tenantId, frontier);
    }
    return total;
  }

  /** In-process, for a runtime acting as the agent: a `private_key_jwt` client assertion. */
  async signClientAssertion(tenantId: string, agentId: string, lifetimeS = 60): Promise<string> {
    await this.tenantAgent(tenantId, agentId);
    const { kid, key } = await this.agentKeys.signingKey(tenantId, agentId);
    const clientId = clientIdUrl(this.ctx.publicBaseUrl, agentId);
    const nowS = Math.floor(this.clock.now() / 1000);
    return new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(this.tokenEndpoint)
      .setIssuedAt(nowS)
      .setExpirationTime(nowS + lifetimeS)
      .setJti(newId())
      .sign(key);
  }

  // ---- OAuth ----

  /** The token endpoint: token exchange or client_credentials. Throws OAuthError. */
  async token(params: Record<string, string | string[] | undefined>, authorization?: string) {
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
    this.maybePrune();
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
      return this.exchange(req);
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
      return clientCredentials(this.ctx, req);
    }
    throw new OAuthError('unsupported_grant_type', `grant_type must be ${GRANT_TOKEN_EXCHANGE} or client_credentials`);
  }

  /** RFC 8693 token exchange (also for in-process callers, such as the runtime delegating to an agent). */
  exchange(req: ExchangeRequest) {
    return exchangeToken(this.ctx, req);
  }

  introspect(principal: Principal, token: string | undefined) {
    return introspect(this.ctx, principal, token);
  }

  /** The ExtAuthZ decision (also for in-process callers: a runtime before each delegated tool call). */
  authorize(token: string | undefined, tool: string, callee: string): MaybePromise<AuthorizeResult> {
    return authorize(this.ctx, token, tool, callee);
  }

  /**
   * Credential verifier for the main API: `client_credentials` access tokens (at+jwt, aud = the API)
   * authenticate like API keys; their scope holds the permissions.
   */
  readonly verifyCredential = async (credential: string): Promise<Principal | null> => {
    if (!looksLikeJwt(credential)) return null;
    const header = peekHeader(credential);
    if (!header || normalisedTyp(header) !== 'at+jwt') return null;
    let claims;
    try {
      claims = await verifyAccessToken(this.ctx, credential);
    } catch (err) {
      if (err instanceof TokenError) return null;
      throw err;
    }
    // A delegation token (token exchange) is valid, but for agent-to-agent calls: say so.
    if (claims.kind !== 'client_credentials' || claims.aud !== this.apiAudience) {
      throw new Unauthenticated(
        'delegation_token',
        'this is a delegation token (token exchange) for agent-to-agent calls: the callee checks it with POST /api/v1/identity/authorize; the API takes an API key or a client_credentials access token',
        'Bearer',
      );
    }
    const permissions = new Set(claims.scope.split(' ').filter(isPermission) as Permission[]);
    const agent = parseAgentSpiffeId(claims.sub, this.ctx.trustDomain);
    if (agent) {
      // An agent's own token: it acts as that agent and reaches only what the agent needs.
      return { tenantId: claims.tenant_id, actor: { type: 'access_token', id: agent.agentId }, permissions, agentId: agent.agentId };
    }
    // Minted from an API key (its client_id): counted against that key's request limit.
    const key = await this.ctx.tenancy.apiKeyRateLimit(claims.client_id);
    if (!key) return null;
    return { tenantId: claims.tenant_id, actor: { type: 'access_token', id: claims.client_id }, permissions, apiKeyId: claims.client_id, rateLimitPerMinute: key.rateLimitPerMinute };
  };

  // ---- platform keys (operators: CLI) ----

  rotatePlatformKey(activationDelayS = DEFAULT_PLATFORM_ACTIVATION_DELAY_S) {
    return this.platformKeys.rotate(activationDelayS);
  }

  async revokePlatformKey(kid: string) {
    const revoked = await this.platformKeys.revoke(kid);
    this.ctx.hot.verified.clear();
    return revoked;
  }

  listPlatformKeys() {
    return this.platformKeys.list();
  }

  /** Expired token rows (and remembered client assertions) are deleted, at most once an hour. */
  private maybePrune() {
    const now = this.clock.now();
    if (now - this.lastPrune < 3600_000) return;
    this.lastPrune = now;
    // Pruning again in an hour is soon enough, but a failure is reported.
    void store.pruneTokens(this.db.kysely, iso(now - TOKEN_RETENTION_MS)).catch((err) => this.log?.warn({ err }, 'pruning expired tokens failed'));
  }
}

