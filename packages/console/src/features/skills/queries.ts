import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

/** The skills listed a hundred a request (every page: the page lists them all). */
const SKILLS_PAGE = 100;

/**
 * The skills' query keys, under one root: an import or an acquisition invalidates `skillKeys.all` (the
 * list, the store, every skill's assignments); an assignment `skillKeys.agents(skillId)`.
 */
export const skillKeys = {
  all: ['skills'] as const,
  list: () => [...skillKeys.all, 'list'] as const,
  store: () => [...skillKeys.all, 'store'] as const,
  agents: (skillId: string) => [...skillKeys.all, skillId, 'agents'] as const,
};

/** The tenant's skills. */
export const skillsQuery = (client: Agentry) =>
  queryOptions({ queryKey: skillKeys.list(), queryFn: () => client.skills.list({ limit: SKILLS_PAGE }).toArray() });

/** The store's skills, each saying whether the tenant acquired it. */
export const skillStoreQuery = (client: Agentry) => queryOptions({ queryKey: skillKeys.store(), queryFn: () => client.skills.store() });

/** The agents a skill is assigned to, with their priority. */
export const skillAgentsQuery = (client: Agentry, skillId: string) =>
  queryOptions({ queryKey: skillKeys.agents(skillId), queryFn: () => client.skills.agents(skillId) });
