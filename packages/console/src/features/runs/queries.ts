import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

export const runKeys = {
  all: ['runs'] as const,
  detail: (runId: string) => [...runKeys.all, runId] as const,
};

/** A run's details (GET /api/v1/runs/:runId): the run page, a playground turn's cost and citations share it. */
export const runQuery = (client: Agentry, runId: string) =>
  queryOptions({ queryKey: runKeys.detail(runId), queryFn: () => client.runs.get(runId) });
