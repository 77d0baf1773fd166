import type { FastifyPluginAsync } from 'fastify';
import { openaiCompatRoutes } from './routes.js';
import { type OpenAiCompatOptions, OpenAiCompatService } from './service.js';

/**
 * The OpenAI-compatible endpoint (docs/clients.md): agents as models under /v1, each completion a run
 * through the runs service; it keeps no state of its own and runs nothing in the background.
 */
export const openaiCompatPlugin: FastifyPluginAsync<OpenAiCompatOptions> = async (app, options) => {
  await app.register(openaiCompatRoutes, { prefix: '/v1', service: new OpenAiCompatService(options) });
};
