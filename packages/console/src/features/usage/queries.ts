import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

/** Usage's query keys: the runs per day, agent, model and status between two days (UTC). */
const usageKeys = {
  all: ['usage'] as const,
  daily: (from: string, to: string) => [...usageKeys.all, 'daily', from, to] as const,
  knowledge: (from: string, to: string) => [...usageKeys.all, 'knowledge', from, to] as const,
};

/** GET /api/v1/usage/daily from `from` to `to` (YYYY-MM-DD, both included). */
export const dailyUsageQuery = (client: Agentry, from: string, to: string) =>
  queryOptions({ queryKey: usageKeys.daily(from, to), queryFn: () => client.usage.daily({ from, to }) });

/** GET /api/v1/knowledge-usage from `from` to `to`: the tokens knowledge spent with providers. */
export const knowledgeUsageQuery = (client: Agentry, from: string, to: string) =>
  queryOptions({ queryKey: usageKeys.knowledge(from, to), queryFn: () => client.usage.knowledge({ from, to }) });
