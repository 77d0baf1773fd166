import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

/** The API keys' query keys: a key created, changed or revoked invalidates `apiKeyKeys.all` (the usage page's list, the settings' rate limits). */
export const apiKeyKeys = {
  all: ['api-keys'] as const,
};

/** The tenant's API keys, every page (listing them takes settings:write). */
export const apiKeysQuery = (client: Agentry) => queryOptions({ queryKey: apiKeyKeys.all, queryFn: () => client.apiKeys.list().toArray() });
