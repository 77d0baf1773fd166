import type { FastifyPluginAsync } from 'fastify';
import { a2aRoutes } from './routes.js';
import { type A2aOptions, A2aService } from './service.js';

/**
 * Agent2Agent (docs/clients.md): each executable agent's Agent Card and JSON-RPC endpoint, every task
 * a run through the runs service; it keeps no state of its own and runs nothing in the background.
 */
export const a2aPlugin: FastifyPluginAsync<A2aOptions> = async (app, options) => {
  await app.register(a2aRoutes, { service: new A2aService(options) });
};
