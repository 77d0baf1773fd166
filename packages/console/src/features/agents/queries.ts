import type { Agentry, paths, QueryOf } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

/*
 * The agents' queries: one key root, ['agents'], under which every query about agents sits, so a
 * change to any agent invalidates them all with agentKeys.all. The apps (the agents' appIds, with
 * their counts) are read with them.
 */

/** A page of the agents list: the filters GET /api/v1/agents takes, with its page. */
export type AgentListQuery = QueryOf<paths['/api/v1/agents']['get']>;

export const agentKeys = {
  all: ['agents'] as const,
  list: (query: AgentListQuery) => [...agentKeys.all, 'list', query] as const,
  // Kept as the other pages name it (tasks, usage, runs...), so they share what it read.
  everyAgent: () => [...agentKeys.all, 'all'] as const,
  // Under 'detail', apart from the memory page's ['agents', id], whose picker reads a cached agent as one the list lacks.
  detail: (agentId: string) => [...agentKeys.all, 'detail', agentId] as const,
  budget: (agentId: string) => [...agentKeys.detail(agentId), 'budget'] as const,
  skills: (agentId: string) => [...agentKeys.detail(agentId), 'skills'] as const,
};

const appKeys = { all: ['apps'] as const };

/** Agents a page of the list shows. */
export const AGENTS_PAGE_SIZE = 20;

/** The list page's query for the URL's search and the typed name (`q`): the page and its route loader ask the same. */
export const agentsPageQuery = (client: Agentry, search: { page?: number; status?: string; appId?: string }, q?: string) =>
  agentListQuery(client, {
    page: search.page ?? 1,
    limit: AGENTS_PAGE_SIZE,
    // The URL's status as typed: one the server does not know is its 400, shown above the list.
    status: search.status as AgentListQuery['status'],
    appId: search.appId,
    q: q || undefined,
  });

/** One page of the agents, as the list shows it (the server searches the names, `q`). */
const agentListQuery = (client: Agentry, query: AgentListQuery) =>
  queryOptions({
    queryKey: agentKeys.list(query),
    queryFn: async () => (await client.api.GET('/api/v1/agents', { params: { query } })).data!,
  });

/** The tenant's agents (the first 100), for pickers. */
export const everyAgentQuery = (client: Agentry) =>
  queryOptions({ queryKey: agentKeys.everyAgent(), queryFn: () => client.agents.list({ limit: 100 }).toArray() });

export const agentQuery = (client: Agentry, agentId: string) =>
  queryOptions({ queryKey: agentKeys.detail(agentId), queryFn: () => client.agents.get(agentId) });

/** Its monthly budget and what it spent this month. */
export const agentBudgetQuery = (client: Agentry, agentId: string) =>
  queryOptions({ queryKey: agentKeys.budget(agentId), queryFn: () => client.agents.budget(agentId) });

/** The skills assigned to it, with each assignment's priority. */
export const agentSkillsQuery = (client: Agentry, agentId: string) =>
  queryOptions({ queryKey: agentKeys.skills(agentId), queryFn: () => client.skills.forAgent(agentId) });

export const appsQuery = (client: Agentry) => queryOptions({ queryKey: appKeys.all, queryFn: () => client.apps.list() });
