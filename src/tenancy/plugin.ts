import type { FastifyPluginAsync } from 'fastify';
import type { LimitsService } from './limits.js';
import { tenancyRoutes } from './routes.js';
import type { TenancyService } from './service.js';

export interface TenancyPluginOptions {
  tenancy: TenancyService;
  limits: LimitsService;
}

/** The tenancy domain: its routes (tenants, API keys, limits, audit events); it runs nothing in the background. */
export const tenancyPlugin: FastifyPluginAsync<TenancyPluginOptions> = async (app, { tenancy, limits }) => {
  await app.register(tenancyRoutes, { tenancy, limits });
};
