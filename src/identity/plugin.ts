import type { FastifyPluginAsync } from 'fastify';
import type { LimitsService } from '../tenancy/limits.js';
import { identityRoutes } from './routes.js';
import type { IdentityService } from './service.js';

export interface IdentityPluginOptions {
  identity: IdentityService;
  /** The OAuth token endpoint's rate limit per client. */
  limits: LimitsService;
}

/**
 * The identity domain: its routes (documents, OAuth, TBAC), and the authorization audit events it
 * buffers: what is still buffered is written when the app closes (a failed write goes to identity's log).
 */
export const identityPlugin: FastifyPluginAsync<IdentityPluginOptions> = async (app, { identity, limits }) => {
  app.addHook('onClose', async () => {
    await identity.flush();
  });
  await app.register(identityRoutes, { identity, limits });
};
