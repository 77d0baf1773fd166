import type { FastifyPluginAsync } from 'fastify';
import { LimitsService, type LimitsOptions } from './limits.js';
import { tenancyPlugin } from './plugin.js';
import { TenancyService } from './service.js';

export interface TenancyDomain {
  tenancy: TenancyService;
  limits: LimitsService;
  /** The routes of tenants, API keys, limits and audit events; nothing runs in the background. */
  plugin: FastifyPluginAsync;
}

/** Builds the tenancy domain: tenants, API keys, audit events, and the limits and budgets. */
export function createTenancyDomain(options: LimitsOptions): TenancyDomain {
  const tenancy = new TenancyService(options.db);
  const limits = new LimitsService(options);
  return { tenancy, limits, plugin: (app) => tenancyPlugin(app, { tenancy, limits }) };
}
