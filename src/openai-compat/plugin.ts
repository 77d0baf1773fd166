import type { FastifyPluginAsync } from 'fastify';
import type { AgentsService } from '../agents/service.js';
import type { RunsService } from '../runs/service.js';
import { openaiCompatRoutes } from './routes.js';
import { OpenAiCompatService } from './service.js';

export interface OpenAiCompatPluginOptions {
  runs: RunsService;
  agents: AgentsService;
  /** How long a completion waits for a person to decide a tool call of its run (OPENAI_APPROVAL_WAIT_SECONDS). */
  approvalWaitMs: number;
}

/**
 * The OpenAI-compatible endpoint (docs/clients.md): agents as models under /v1, each completion a run
 * through the runs service; it keeps no state of its own and runs nothing in the background.
 */
export const openaiCompatPlugin: FastifyPluginAsync<OpenAiCompatPluginOptions> = async (app, { runs, agents, approvalWaitMs }) => {
  await app.register(openaiCompatRoutes, { prefix: '/v1', service: new OpenAiCompatService(runs, agents, approvalWaitMs) });
};
