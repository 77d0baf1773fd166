import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';
import { firstPage } from '../../lib/first-page';

/** The connectors' query keys, under one root: a connection made, changed or removed invalidates `connectorKeys.all`. */
export const connectorKeys = {
  all: ['connectors'] as const,
  catalog: () => [...connectorKeys.all, 'catalog'] as const,
  requests: () => [...connectorKeys.all, 'requests'] as const,
};

/** The integration catalog, each connector with the tenant's connection (secrets masked). */
export const connectorsQuery = (client: Agentry) =>
  queryOptions({ queryKey: connectorKeys.catalog(), queryFn: () => client.connectors.list() });

/** Agents' requests to use a connector, newest first: the first page, of the server's default size. */
export const connectorRequestsQuery = (client: Agentry) =>
  queryOptions({
    queryKey: connectorKeys.requests(),
    queryFn: async () => (await firstPage(client.connectors.requests())).items,
  });
