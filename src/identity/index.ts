import type { FastifyPluginAsync } from 'fastify';
import type { DeleteHook } from '../agents/service.js';
import type { LimitsService } from '../tenancy/limits.js';
import { identityPlugin } from './plugin.js';
import { type IdentityOptions, IdentityService } from './service.js';

export interface IdentityDomainOptions extends IdentityOptions {
  /** The OAuth token endpoint's rate limit per client (tenancy's limits). */
  limits: LimitsService;
}

export interface IdentityDomain {
  identity: IdentityService;
  /** The routes (documents, OAuth, TBAC), and the authorization audit events written when the app closes. */
  plugin: FastifyPluginAsync;
  contributions: {
    /** A deleted agent's keys are revoked, and with them every SVID and token bound to them. */
    onAgentDeleted: DeleteHook;
  };
}

/** Builds the identity domain: agent identity and TBAC. */
export function createIdentityDomain({ limits, ...options }: IdentityDomainOptions): IdentityDomain {
  const identity = new IdentityService(options);
  return {
    identity,
    plugin: (app) => identityPlugin(app, { identity, limits }),
    contributions: { onAgentDeleted: identity.forgetAgent },
  };
}
