import type { FastifyPluginAsync } from 'fastify';
import { agentsPlugin } from './plugin.js';
import { type AgentsOptions, AgentsService } from './service.js';

export interface AgentsDomain {
  agents: AgentsService;
  /** The agents' routes; nothing runs in the background. */
  plugin: FastifyPluginAsync;
}

/** Builds the agents domain, the first one: most others read agents, so what they attach to one reaches it through lazy ports. */
export function createAgentsDomain(options: AgentsOptions): AgentsDomain {
  const agents = new AgentsService(options);
  return { agents, plugin: (app) => agentsPlugin(app, { agents }) };
}
