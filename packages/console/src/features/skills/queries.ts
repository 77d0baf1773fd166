import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

/** The skills' keys, under one root. */
const skillKeys = {
  all: ['skills'] as const,
  catalog: () => [...skillKeys.all, 'catalog'] as const,
};

export const skillQueries = {
  /** The tenant's skills (the first 200), to pick from. */
  catalog: (client: Agentry) =>
    queryOptions({
      queryKey: skillKeys.catalog(),
      queryFn: async () => {
        const first = await client.skills.list({ limit: 200 }).pages().next();
        return first.done ? [] : first.value.items;
      },
    }),
};
