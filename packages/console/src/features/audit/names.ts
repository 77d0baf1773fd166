import type { Agentry, AuditEvent } from '@agentry/client';
import { useQuery } from '@tanstack/react-query';
import { useClient } from '../../api';
import { firstPage } from '../../lib/first-page';

/** How many of each kind are fetched to name them (one page each): beyond, an id's tail shows. */
const NAMED_AT_MOST = 100;

/** Names by id: the tenant's agents, API keys and knowledge bases, as far as the credential may read them. */
export type Names = Map<string, string>;

/** What the key may not read (a 403) names nothing; the rest still names what it can. */
async function namesOf(client: Agentry): Promise<Names> {
  const lists = await Promise.allSettled([
    firstPage(client.agents.list({ limit: NAMED_AT_MOST })),
    firstPage(client.apiKeys.list({ limit: NAMED_AT_MOST })),
    firstPage(client.knowledge.list({ limit: NAMED_AT_MOST })),
  ]);
  const names: Names = new Map();
  for (const list of lists) {
    if (list.status === 'fulfilled') for (const item of list.value.items as { id: string; name: string }[]) names.set(item.id, item.name);
  }
  return names;
}

export function useNames() {
  const client = useClient();
  return useQuery({ queryKey: ['audit', 'names'], queryFn: () => namesOf(client), staleTime: 60_000 });
}

const tail = (id: string) => `…${id.slice(-8)}`;
const text = (value: unknown) => (typeof value === 'string' && value ? value : null);

/** A thing an event names, as a person reads it: its name where known, else what the event says of it, else its id's tail. */
export function nameOf(names: Names, id: string | null, detail?: unknown): string | null {
  if (!id) return null;
  const known = names.get(id);
  if (known) return known;
  const d = detail && typeof detail === 'object' ? (detail as Record<string, unknown>) : {};
  return text(d.name) ?? text(d.label) ?? text(d.title) ?? tail(id);
}

/** Who did it: a key or an agent by name, else its kind and id's tail. */
export function actorOf(names: Names, event: AuditEvent): string {
  return actorName(names, event.actorType, event.actorId);
}

/** An actor of this kind (`api_key`, `agent`, ...) and id, by name where known (also a memory version's). */
export function actorName(names: Names, type: string, id: string | null | undefined): string {
  const kind = type.replace(/_/g, ' ');
  if (!id) return kind;
  const known = names.get(id);
  return known ? `${kind} ${known}` : `${kind} ${tail(id)}`;
}

/** The resource types the server records (the filter's choices). */
export const RESOURCE_TYPES = [
  'agent',
  'api_key',
  'approval',
  'connector',
  'connector_request',
  'conversation',
  'file',
  'knowledge_base',
  'knowledge_document',
  'memory_block',
  'run',
  'skill',
  'task',
  'tbac_policy',
  'tenant',
];
