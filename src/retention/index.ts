import type { FastifyPluginAsync } from 'fastify';
import { RetentionSettingsService } from '../tenancy/retention.js';
import type { TenancyService } from '../tenancy/service.js';
import { retentionPlugin } from './plugin.js';
import { RetentionSweep, type RetentionSweepOptions } from './sweep.js';

export interface RetentionDomainOptions extends Omit<RetentionSweepOptions, 'tenants'> {
  /** Each tenant's settings are kept with the tenant. */
  tenancy: TenancyService;
}

export interface RetentionDomain {
  /** Each tenant's retention settings. */
  settings: RetentionSettingsService;
  /** The sweep deleting what is past them. */
  sweep: RetentionSweep;
  /** The settings' routes, and the sweep started on onReady and stopped on onClose. */
  plugin: FastifyPluginAsync;
}

/** Builds the retention domain (docs/operations.md, "Retention"): each domain deletes its own rows when the sweep asks. */
export function createRetentionDomain({ tenancy, ...options }: RetentionDomainOptions): RetentionDomain {
  const settings = new RetentionSettingsService({ db: options.db, tenancy });
  const sweep = new RetentionSweep({ ...options, tenants: settings });
  return { settings, sweep, plugin: (app) => retentionPlugin(app, { settings, sweep }) };
}
