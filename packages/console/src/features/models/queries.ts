import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

/** A model GET /api/v1/models offers (docs/models.md): its price, window and whether it can run now. */
export type ModelOffer = Awaited<ReturnType<Agentry['models']['list']>>['models'][number];

const modelKeys = { all: ['models'] as const };

/** The models this server offers and its default; they change only with its configuration. */
export const modelsQuery = (client: Agentry) =>
  queryOptions({ queryKey: modelKeys.all, staleTime: 60_000, queryFn: () => client.models.list() });
