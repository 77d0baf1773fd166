import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

/**
 * The tenant's settings' query keys, under one root: a group's save puts its answer under its key
 * (`settingsKeys.limits()`, ...), which the usage page's limits read too.
 */
export const settingsKeys = {
  all: ['settings'] as const,
  limits: () => [...settingsKeys.all, 'limits'] as const,
  retention: () => [...settingsKeys.all, 'retention'] as const,
  code: () => [...settingsKeys.all, 'code'] as const,
};

/** The tenant's limits and budget, with this month's spend and the runs running. */
export const limitsQuery = (client: Agentry) => queryOptions({ queryKey: settingsKeys.limits(), queryFn: () => client.tenant.limits() });

export const retentionQuery = (client: Agentry) =>
  queryOptions({ queryKey: settingsKeys.retention(), queryFn: () => client.tenant.retention() });

/** Code execution's limits, and the server's maxima. */
export const codeSettingsQuery = (client: Agentry) =>
  queryOptions({ queryKey: settingsKeys.code(), queryFn: () => client.code.settings() });
