import type { FastifyPluginAsync } from 'fastify';
import { approvalsRoutes } from './routes.js';
import type { ApprovalsService } from './service.js';

export interface ApprovalsPluginOptions {
  approvals: ApprovalsService;
}

/**
 * The approvals domain: the inbox's routes, and while the server runs, the sweep that expires
 * approvals nobody decided and resumes decided runs no process resumed (approvals/service.ts).
 */
export const approvalsPlugin: FastifyPluginAsync<ApprovalsPluginOptions> = async (app, { approvals }) => {
  app.addHook('onReady', async () => {
    approvals.startBackground();
  });
  app.addHook('onClose', async () => {
    await approvals.stop();
  });
  await app.register(approvalsRoutes, { approvals });
};
