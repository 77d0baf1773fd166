import type { FastifyPluginAsync } from 'fastify';
import type { AgentsService } from '../agents/service.js';
import type { RunsService } from '../runs/service.js';
import type { SkillsService } from '../skills/service.js';
import { a2aRoutes } from './routes.js';
import { A2aService } from './service.js';

export interface A2aPluginOptions {
  runs: RunsService;
  agents: AgentsService;
  skills: Pick<SkillsService, 'usableSkillBriefs'>;
  /** The base of the card's endpoint and token URLs. */
  publicBaseUrl: string;
}

/**
 * Agent2Agent (docs/clients.md): each executable agent's Agent Card and JSON-RPC endpoint, every task
 * a run through the runs service; it keeps no state of its own and runs nothing in the background.
 */
export const a2aPlugin: FastifyPluginAsync<A2aPluginOptions> = async (app, { runs, agents, skills, publicBaseUrl }) => {
  const service = new A2aService(runs, agents, (tenantId, agentId) => skills.usableSkillBriefs(tenantId, agentId), publicBaseUrl);
  await app.register(a2aRoutes, { service });
};
