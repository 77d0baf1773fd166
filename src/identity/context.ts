import type { AgentsService } from '../agents/service.js';
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import type { TenancyService } from '../tenancy/service.js';
import type { TokenState, VerifiedToken } from './claims.js';
import type { AuditBuffer } from '../tenancy/audit-buffer.js';
import type { TtlCache } from './cache.js';
import type { AgentKeyring } from './agent-keys.js';
import type { PlatformKeyring } from './platform-keys.js';
import type { PolicyEngine } from './policies.js';
import type { AgentStandings } from './standing.js';

import type { PlatformTokens } from './tokens.js';

/** What the identity modules share; built once by IdentityService. */
export interface IdentityContext {
  db: Db;
  issuer: string;
  trustDomain: string;
  publicBaseUrl: string;
  /** `{base_url}/api/v1/identity/oauth/token`. */
  tokenEndpoint: string;
  /** `aud` of access tokens for the platform's own API (client_credentials). */
  apiAudience: string;
  clock: Clock;
  platformKeys: PlatformKeyring;
  agentKeys: AgentKeyring;
  tokens: PlatformTokens;
  tenancy: TenancyService;
  /** Agents are read through their domain's service (identity documents, standings, policies). */
  agents: AgentsService;
  policies: PolicyEngine;
  audit: AuditBuffer;
  /** Whether the agents a token names still exist and are not suspended (read on every use). */
  standings: AgentStandings;
  spiffeIdOf(tenantId: string, agentId: string): string;
  /** Hot-path caches (authorization decisions); cleared by revocations made in this process. */
  hot: {
    /** Access tokens whose signature and claims verified, by the token itself. */
    verified: TtlCache<VerifiedToken>;
    /** Revocation state by jti (null: unknown token). */
    tokenStates: TtlCache<TokenState | null>;
  };
  /** Told of tokens issued and authorization decisions (the metrics, given to the IdentityService); absent, nothing is. */
  observer?: IdentityObserver;
}

/** What identity tells an observer (the metrics): cheap, synchronous calls. */
export interface IdentityObserver {
  /** A token issued, by kind (exchange, client_credentials, svid). */
  tokenIssued(kind: string, tenantId: string): void;
  /** An authorization decision and its reason (AuthorizeReason); the tenant when known. */
  authorized(allowed: boolean, reason: string, tenantId: string | null): void;
}
