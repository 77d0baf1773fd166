import { ReadCache } from '../db/changes.js';
import type { AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import type { AccessClaims, Act } from './claims.js';
import { parseAgentSpiffeId } from './spiffe.js';
import { TokenError } from './tokens.js';

/**
 * Whether an agent's identity is in force: the agent exists and is not suspended. A registered
 * (externally hosted) agent that is paused has its identity suspended (CONTRACT.md, Agents): no new
 * SVIDs, badges, exchanges or API tokens, and every token naming it stops being active. A deleted
 * agent's tokens end the same way. Tokens are judged when they are used, against the agents they
 * name (subject, audience, every actor of the chain), so no token survives its agent, whichever
 * cache or replica verifies it: the agents table is read through a ReadCache, which every write to
 * it makes stale at once in every process (db/changes.ts).
 */

export type Standing = 'active' | 'suspended' | 'gone';

interface AgentState {
  tenantId: string | null;
  suspended: boolean;
}

/** A registered agent paused: its identity is suspended. */
export const identitySuspended = (agent: { status: string; hosting: string }) => agent.hosting === 'external' && agent.status === 'paused';

export class AgentStandings {
  private readonly cache: ReadCache<AgentState>;

  constructor(
    db: Db,
    private readonly agents: AgentsService,
  ) {
    this.cache = new ReadCache(db.changes, 'agents', { max: 10_000 });
  }

  /** The standing of an agent of the tenant. */
  async of(tenantId: string, agentId: string): Promise<Standing> {
    const state = await this.cache.get(agentId, async () => {
      const row = await this.agents.identityAnyTenant(agentId);
      // A missing agent is remembered too (as tenant null): any write to agents makes it stale.
      return row ? { tenantId: row.tenant_id, suspended: identitySuspended(row) } : { tenantId: null, suspended: false };
    });
    return judge(state, tenantId);
  }

  /**
   * Throws TokenError unless every agent the token names (`agents`: namedAgents of its claims)
   * stands; a token naming no agent (an API key's) passes.
   */
  async check(claims: AccessClaims, agents: readonly string[]): Promise<void> {
    await Promise.all(agents.map(async (agentId) => assertStands(await this.of(claims.tenant_id, agentId), agentId, claims)));
  }
}

function judge(state: AgentState | undefined, tenantId: string): Standing {
  if (!state || state.tenantId !== tenantId) return 'gone';
  return state.suspended ? 'suspended' : 'active';
}

function assertStands(standing: Standing, agentId: string, claims: AccessClaims) {
  if (standing === 'gone')
    throw new TokenError(`the agent ${agentId} named by the token has been deleted`, claims as unknown as Record<string, unknown>);
  if (standing === 'suspended')
    throw new TokenError(
      `the identity of the agent ${agentId} named by the token is suspended (paused)`,
      claims as unknown as Record<string, unknown>,
    );
}

/** The agents of the token's tenant that a token names: `sub`, `aud` and every `act.sub`. */
export function namedAgents(claims: AccessClaims, trustDomain: string): string[] {
  const out = new Set<string>();
  const add = (value: string | undefined) => {
    const ref = value ? parseAgentSpiffeId(value, trustDomain) : null;
    if (ref) out.add(ref.agentId);
  };
  add(claims.sub);
  add(claims.aud);
  for (let act: Act | undefined = claims.act; act; act = act.act) add(act.sub);
  return [...out];
}
