import type { FastifyPluginAsync } from 'fastify';
import type { RetentionSettingsService } from '../tenancy/retention.js';
import { retentionRoutes } from './routes.js';
import type { RetentionSweep } from './sweep.js';

export interface RetentionPluginOptions {
  settings: RetentionSettingsService;
  sweep: RetentionSweep;
}

/** Retention: the settings' routes, and the sweep started on onReady and stopped on onClose. */
export const retentionPlugin: FastifyPluginAsync<RetentionPluginOptions> = async (app, { settings, sweep }) => {
  await app.register(retentionRoutes, { settings });
  app.addHook('onReady', async () => sweep.start());
  app.addHook('onClose', async () => sweep.stop());
};
