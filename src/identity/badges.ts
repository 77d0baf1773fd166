import { toolsColumn } from '../agents/columns.js';
import type { AgentIdentity } from '../agents/service.js';
import { newId } from '../ids.js';
import { BADGE_LIFETIME_S, badgeCredential } from './badge.js';
import { TtlCache } from './cache.js';
import type { IdentityContext } from './context.js';
import { TYP } from './tokens.js';

/** The skills a badge lists for an agent (id, name, version). */
export type BadgeSkills = { id: string; name: string; version: string | null }[];

/**
 * Signs agents' badges (badge.ts), keeping the last one per agent and form: a badge is re-signed when
 * the agent, its skills or the signing key change, or half its life has passed; earlier ones stay valid
 * until they expire.
 */
export class BadgeSigner {
  /** The last badge per agent and form, kept until half its life has passed. */
  private readonly signed: TtlCache<{ key: string; token: string }>;

  constructor(private readonly ctx: IdentityContext) {
    this.signed = new TtlCache({ ttlMs: (BADGE_LIFETIME_S / 2) * 1000, clock: ctx.clock });
  }

  async badge(agent: AgentIdentity, skills: BadgeSkills, compact: boolean): Promise<string> {
    const { kid } = await this.ctx.platformKeys.signingKey();
    const cacheKey = `${agent.updated_at}|${kid}|${JSON.stringify(skills)}`;
    const nowS = Math.floor(this.ctx.clock.now() / 1000);
    const cached = this.signed.get(`${agent.id}|${compact}`);
    if (cached && cached.key === cacheKey) return cached.token;
    const spiffeId = this.ctx.spiffeIdOf(agent.tenant_id, agent.id);
    const id = `urn:uuid:${newId()}`;
    const credential = badgeCredential(
      {
        spiffeId,
        agentId: agent.id,
        tenantId: agent.tenant_id,
        name: agent.name,
        hosting: agent.hosting,
        tools: toolsColumn(agent.tools),
        skills,
      },
      { issuer: this.ctx.issuer, id, iat: nowS, exp: nowS + BADGE_LIFETIME_S, compact },
    );
    const signed = await this.ctx.tokens.sign({
      typ: TYP.badge,
      cty: 'vc',
      sub: spiffeId,
      iat: nowS,
      lifetimeS: BADGE_LIFETIME_S,
      jti: id,
      payload: credential,
    });
    const reuseUntilMs = (signed.exp - BADGE_LIFETIME_S / 2) * 1000;
    this.signed.set(`${agent.id}|${compact}`, { key: cacheKey, token: signed.token }, reuseUntilMs - this.ctx.clock.now());
    return signed.token;
  }
}
