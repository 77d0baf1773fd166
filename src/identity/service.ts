import { SignJWT } from 'jose';
import type { AgentIdentity, AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import { Conflict, NotFound } from '../errors.js';
import type { Kysely } from 'kysely';
import type { BaseLogger } from 'pino';
import type { Database } from '../db/schema.js';
import { type Clock, systemClock } from '../clock.js';
import { newId } from '../ids.js';
import { recordAudit } from '../tenancy/audit.js';
import { PERMISSIONS, type Principal } from '../tenancy/permissions.js';
import type { TenancyService } from '../tenancy/service.js';
import type { TokenState, VerifiedToken } from './claims.js';
import { verifyApiCredential } from './api-credential.js';
import { clientIdUrl } from './audience.js';
import { AuditBuffer } from '../tenancy/audit-buffer.js';
import { authorize, type AuthorizeResult } from './authorize.js';
import { BadgeSigner } from './badges.js';
import { DECISION_CACHE_MS, TtlCache } from './cache.js';
import type { IdentityContext, IdentityObserver } from './context.js';
import { agentJwks, clientMetadata, platformJwks, trustBundle } from './documents.js';
import { exchangeToken, type ExchangeRequest } from './exchange.js';
import { introspect } from './introspect.js';
import { AgentKeyring } from './agent-keys.js';
import { DEFAULT_PLATFORM_ACTIVATION_DELAY_S, PLATFORM_KEY_CACHE_MS, iso } from './key-material.js';
import { PlatformKeyring } from './platform-keys.js';
import { loadMasterKey, type MasterKeySource } from './master-key.js';
import { PolicyEngine } from './policies.js';
import { revokeTokenChain } from './revocation.js';
import { agentSpiffeId } from './spiffe.js';
import { AgentStandings, identitySuspended } from './standing.js';
import * as store from './store.js';
import { issueSvid } from './svid.js';
import { tokenGrant } from './token-endpoint.js';
import { PlatformTokens } from './tokens.js';

/** Token rows are kept this long after they expire, then pruned. */
const TOKEN_RETENTION_MS = 24 * 3600 * 1000;

/** A skill an agent may use now, as its badge lists it. */
interface SkillCapability {
  id: string;
  name: string;
  /** The `version` the skill's metadata declares, or null. */
  version: string | null;
}

/** The skills an agent may use now (assigned, enabled, active); the skills domain provides them. */
export type SkillCapabilities = (tenantId: string, agentId: string) => Promise<readonly SkillCapability[]>;

/** The settings identity needs (config.ts's Config has them), so identity does not depend on config.ts. */
interface IdentityConfig extends MasterKeySource {
  issuer: string;
  trustDomain: string;
  publicBaseUrl: string;
}

export interface IdentityOptions {
  db: Db;
  config: IdentityConfig;
  tenancy: TenancyService;
  agents: AgentsService;
  /** Where failures of background upkeep (pruning expired tokens, writing buffered audit events) are reported. */
  log?: Pick<BaseLogger, 'warn' | 'error'>;
  /** Told of tokens issued and authorization decisions (the metrics); absent, nothing is observed. */
  observer?: IdentityObserver;
  /** The skills each agent may use, which its badge lists (the skills domain); absent, none. */
  skillCapabilities?: SkillCapabilities;
  /** Key lifetimes, token expiry and the hot path's caches are measured on it (default: real time). */
  clock?: Clock;
}

/**
 * Agent identity: keys, identity documents, SVIDs, badges, token exchange, introspection, the
 * ExtAuthZ decision and TBAC policies. Routes call it over HTTP; a runtime can call `exchange`,
 * `authorize`, `issueSvid` and `signClientAssertion` in-process.
 */
export class IdentityService {
  readonly clock: Clock;
  readonly platformKeys: PlatformKeyring;
  readonly agentKeys: AgentKeyring;
  readonly policies: PolicyEngine;
  readonly auditBuffer: AuditBuffer;
  readonly ctx: IdentityContext;
  private readonly badges: BadgeSigner;
  private readonly db: Db;
  private readonly agents: AgentsService;
  private readonly log: Pick<BaseLogger, 'warn' | 'error'> | undefined;
  private readonly skillCapabilities: SkillCapabilities;
  private lastPrune = 0;

  constructor({ db, config, tenancy, agents, log, observer, skillCapabilities = async () => [], clock = systemClock }: IdentityOptions) {
    this.db = db;
    this.agents = agents;
    this.log = log;
    this.skillCapabilities = skillCapabilities;
    this.clock = clock;
    const masterKey = loadMasterKey(config);
    this.platformKeys = new PlatformKeyring(db, masterKey, this.clock);
    this.agentKeys = new AgentKeyring(db, masterKey, this.clock);
    this.policies = new PolicyEngine(db, tenancy, agents, clock);
    this.auditBuffer = new AuditBuffer(db, log && ((err) => log.error({ err }, 'writing authorization audit events failed')));
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
      hot: {
        verified: new TtlCache<VerifiedToken>({ ttlMs: PLATFORM_KEY_CACHE_MS, clock }),
        tokenStates: new TtlCache<TokenState | null>({ ttlMs: DECISION_CACHE_MS, clock }),
      },
      observer,
    };
    this.badges = new BadgeSigner(this.ctx);
  }

  get issuer() {
    return this.ctx.issuer;
  }
  get tokenEndpoint() {
    return this.ctx.tokenEndpoint;
  }

  /**
   * RFC 8414 metadata of the platform as an OAuth authorization server, for clients that discover how
   * to get a token (MCP clients, from an endpoint's RFC 9728 metadata): the token endpoint and its
   * grants. No grant sends a person through the authorization endpoint: it is named because the
   * clients require one, and answers every request unsupported_response_type.
   */
  authorizationServerMetadata() {
    const base = this.ctx.publicBaseUrl;
    return {
      issuer: this.ctx.issuer,
      authorization_endpoint: `${base}/api/v1/identity/oauth/authorize`,
      token_endpoint: this.ctx.tokenEndpoint,
      jwks_uri: `${base}/api/v1/identity/.well-known/jwks.json`,
      introspection_endpoint: `${base}/api/v1/identity/oauth/introspect`,
      grant_types_supported: ['client_credentials', 'urn:ietf:params:oauth:grant-type:token-exchange'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
      token_endpoint_auth_signing_alg_values_supported: ['ES256'],
      scopes_supported: [...PERMISSIONS],
      response_types_supported: [] as string[],
      service_documentation: `${base}/docs`,
    };
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
    if (identitySuspended(agent))
      throw new Conflict('agent_suspended', 'the agent is paused: its identity is suspended until it is resumed');
    return agent;
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
    await revokeTokenChain(trx, tenantId, await store.activeTokensOfAgent(trx, tenantId, agentId), at);
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
    return clientMetadata(this.ctx, agent, (compact) => this.badge(agent, compact));
  }

  async agentJwks(agentId: string) {
    return agentJwks(this.ctx, await this.publicAgent(agentId));
  }

  platformJwks() {
    return platformJwks(this.ctx);
  }

  trustBundle() {
    return trustBundle(this.ctx);
  }

  // ---- SVIDs and agent keys ----

  async issueSvid(principal: Principal, agentId: string, audience: string[], ttlSeconds: number) {
    this.notSuspended(await this.tenantAgent(principal.tenantId, agentId));
    const svid = await issueSvid(this.ctx, {
      tenantId: principal.tenantId,
      agentId,
      audience,
      ttlS: ttlSeconds,
      audit: (jti) => ({
        tenantId: principal.tenantId,
        actor: principal.actor,
        action: 'identity.svid_issued',
        resourceType: 'agent',
        resourceId: agentId,
        detail: { jti, audience, ttlSeconds },
      }),
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
    const { key, privateJwk, previous } = await this.agentKeys.rotate(principal.tenantId, agentId, (rotated) => ({
      tenantId: principal.tenantId,
      actor: principal.actor,
      action: 'identity.agent_key_rotated',
      resourceType: 'agent',
      resourceId: agentId,
      detail: { kid: rotated.key.kid, rotated: rotated.previous.map((p) => p.kid) },
    }));
    return {
      key: this.agentKeys.view(key),
      rotated: previous.map((p) => this.agentKeys.view(p)),
      // An externally hosted agent signs its client assertions itself: it gets its private key, once.
      ...(agent.hosting === 'external' ? { privateJwk: { ...privateJwk, kid: key.kid, alg: 'ES256' } } : {}),
    };
  }

  async revokeAgentKey(principal: Principal, agentId: string, kid: string) {
    await this.tenantAgent(principal.tenantId, agentId);
    const tenantId = principal.tenantId;
    // The key, the tokens bound to it (and exchanged from them) and the audit event: one transaction.
    const result = await this.db.kysely.transaction().execute(async (trx) => {
      const revoked = await this.agentKeys.revoke(trx, { tenantId, agentId, kid });
      if (!revoked?.changed) return revoked;
      const at = iso(this.clock.now());
      const revokedTokens = await revokeTokenChain(trx, tenantId, await store.activeTokensOfAgentKey(trx, tenantId, kid), at);
      await recordAudit(trx, {
        tenantId,
        actor: principal.actor,
        action: 'identity.agent_key_revoked',
        resourceType: 'agent',
        resourceId: agentId,
        detail: { kid, revokedTokens },
      });
      return revoked;
    });
    if (!result) throw new NotFound('key');
    if (result.changed) this.ctx.hot.tokenStates.clear();
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

  /** The token endpoint: token exchange or client_credentials (token-endpoint.ts). Throws OAuthError. */
  async token(params: Record<string, string | string[] | undefined>, authorization?: string) {
    this.maybePrune();
    return tokenGrant(this.ctx, params, authorization);
  }

  /** RFC 8693 token exchange (also for in-process callers, such as the runtime delegating to an agent). */
  exchange(req: ExchangeRequest) {
    return exchangeToken(this.ctx, req);
  }

  introspect(principal: Principal, token: string | undefined) {
    return introspect(this.ctx, principal, token);
  }

  /** The ExtAuthZ decision (also for in-process callers: a runtime before each delegated tool call). */
  authorize(token: string | undefined, tool: string, callee: string): Promise<AuthorizeResult> {
    return authorize(this.ctx, token, tool, callee);
  }

  /** Credential verifier for the main API: client_credentials access tokens (api-credential.ts). */
  readonly verifyCredential = (credential: string): Promise<Principal | null> => verifyApiCredential(this.ctx, credential);

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

  /** The platform keys, and those that sign now or will whose private key does not open (`agentry doctor`). */
  checkPlatformKeys() {
    return this.platformKeys.check();
  }

  /** Expired token rows (and remembered client assertions) are deleted, at most once an hour. */
  private maybePrune() {
    const now = this.clock.now();
    if (now - this.lastPrune < 3600_000) return;
    this.lastPrune = now;
    // Pruning again in an hour is soon enough, but a failure is reported.
    void store
      .pruneTokens(this.db.kysely, iso(now - TOKEN_RETENTION_MS))
      .catch((err) => this.log?.warn({ err }, 'pruning expired tokens failed'));
  }
}
