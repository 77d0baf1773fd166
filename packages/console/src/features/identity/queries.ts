import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

/** The TBAC policies are read a hundred a request (every page: the page lists them all). */
const POLICIES_PAGE = 100;

/**
 * Identity's query keys, under one root: an agent's client metadata and keys, the TBAC mode and
 * policies. A change invalidates the key of what it changed (`identityKeys.keys(agentId)`, `identityKeys.policies()`, ...).
 */
export const identityKeys = {
  all: ['identity'] as const,
  agent: (agentId: string) => [...identityKeys.all, 'agents', agentId] as const,
  metadata: (agentId: string) => [...identityKeys.agent(agentId), 'metadata'] as const,
  keys: (agentId: string) => [...identityKeys.agent(agentId), 'keys'] as const,
  tbac: () => [...identityKeys.all, 'tbac'] as const,
  mode: () => [...identityKeys.tbac(), 'mode'] as const,
  policies: () => [...identityKeys.tbac(), 'policies'] as const,
};

/** The agent's OAuth client metadata, its SPIFFE ID and badge (public, as relying parties read it). */
export const clientMetadataQuery = (client: Agentry, agentId: string) =>
  queryOptions({ queryKey: identityKeys.metadata(agentId), queryFn: () => client.identity.clientMetadata(agentId) });

export const agentKeysQuery = (client: Agentry, agentId: string) =>
  queryOptions({ queryKey: identityKeys.keys(agentId), queryFn: () => client.identity.keys(agentId) });

/** What TBAC does when no policy matches: `audit` (allow, record) or `enforce` (deny). */
export const tbacModeQuery = (client: Agentry) => queryOptions({ queryKey: identityKeys.mode(), queryFn: () => client.identity.mode() });

export const policiesQuery = (client: Agentry) =>
  queryOptions({ queryKey: identityKeys.policies(), queryFn: () => client.identity.policies({ limit: POLICIES_PAGE }).toArray() });
