import type { FastifyPluginAsync } from 'fastify';
import { memoryRoutes } from './routes.js';
import type { MemoryService } from './service.js';

export interface MemoryPluginOptions {
  memory: MemoryService;
}

/**
 * The memory domain's routes: /api/v1/agents/:id/memory. It runs nothing in the background; what it adds
 * to the other domains (the runs' system prompt, the tools, agents' deletion) are its contributions (createMemoryDomain).
 */
export const memoryPlugin: FastifyPluginAsync<MemoryPluginOptions> = async (app, { memory }) => {
  await app.register(memoryRoutes, { memory });
};
