import type { FastifyPluginAsync } from 'fastify';
import type { AgentsService } from '../agents/service.js';
import { connectorsRoutes } from './connectors/routes.js';
import type { ConnectorsService } from './connectors/service.js';
import { type ProtectedResourceOptions, skillsMcpRoutes } from './mcp.js';
import { skillsRoutes } from './routes.js';
import type { SkillsService } from './service.js';
import type { SkillTools } from './tools.js';

export interface SkillsPluginOptions {
  skills: SkillsService;
  connectors: ConnectorsService;
  skillTools: SkillTools;
  /** The MCP endpoint serves an agent's skill tools: it reads the agent. */
  agents: AgentsService;
  /** What the MCP endpoint's protected resource metadata names (RFC 9728). */
  protectedResource: ProtectedResourceOptions;
}

/**
 * The skills domain's routes: /api/skills, /api/v1/connectors, /api/v1/agents/:agentId/mcp. It runs
 * nothing in the background; what it adds to the other domains are its contributions (createSkillsDomain).
 */
export const skillsPlugin: FastifyPluginAsync<SkillsPluginOptions> = async (
  app,
  { skills, connectors, skillTools, agents, protectedResource },
) => {
  await app.register(skillsRoutes, { skills });
  await app.register(connectorsRoutes, { connectors });
  await app.register(skillsMcpRoutes, { agents, tools: skillTools, protectedResource });
};
