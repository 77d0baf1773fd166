import type { FastifyPluginAsync } from 'fastify';
import { runsRoutes } from './routes.js';
import type { RunsService } from './service.js';

export interface RunsPluginOptions {
  runs: RunsService;
}

/**
 * The runs domain: its routes, and while the server runs, lease renewal of the runs executing here and
 * recovery of runs whose lease expired elsewhere (runs/leases.ts).
 */
export const runsPlugin: FastifyPluginAsync<RunsPluginOptions> = async (app, { runs }) => {
  app.addHook('onReady', async () => {
    await runs.startBackground();
  });
  app.addHook('onClose', async () => {
    await runs.stop();
  });
  await app.register(runsRoutes, { runs });
};
