import type { FastifyPluginAsync } from 'fastify';
import { agentsRoutes } from './routes.js';
import type { AgentsService } from './service.js';

export interface AgentsPluginOptions {
  agents: AgentsService;
}

/** The agents domain: its routes (it runs nothing in the background). */
export const agentsPlugin: FastifyPluginAsync<AgentsPluginOptions> = async (app, { agents }) => {
  await app.register(agentsRoutes, { agents });
};
