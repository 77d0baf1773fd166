import type { AuditEvent } from '@agentry/client';
import { Alert, Code, Group, Pagination, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient } from '../../api';
import { AnchorLink } from '../../links';
import { actorOf, type Names, nameOf, RESOURCE_TYPES, useNames } from './names';

/** Events on one page of the log (one page of the API); the count says how many match in all. */
const EVENTS_SHOWN = 100;

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

function When({ iso }: { iso: string }) {
  return (
    <time dateTime={iso} title={iso}>
      {dateFormat.format(new Date(iso))}
    </time>
  );
}

const detailOf = (event: AuditEvent) => (event.detail && typeof event.detail === 'object' ? (event.detail as Record<string, unknown>) : {});

/** The event's resource by name, a link where the console has a page for it. */
function Resource({ event, names }: { event: AuditEvent; names: Names }) {
  const id = event.resourceId;
  const detail = detailOf(event);
  const name = nameOf(names, id, detail);
  const kind = event.resourceType.replace(/_/g, ' ');
  if (!id || !name) return <>{kind}</>;
  const agentId = typeof detail.agentId === 'string' ? detail.agentId : null;
  const link = (() => {
    switch (event.resourceType) {
      case 'agent':
        return event.action === 'agent.deleted' ? null : (
          <AnchorLink to="/agents/$agentId" params={{ agentId: id }}>
            {name}
          </AnchorLink>
        );
      case 'knowledge_base':
        return event.action === 'knowledge_base.deleted' ? null : (
          <AnchorLink to="/knowledge/$baseId" params={{ baseId: id }}>
            {name}
          </AnchorLink>
        );
      case 'task':
        return (
          <AnchorLink to="/tasks/$taskId" params={{ taskId: id }}>
            {name}
          </AnchorLink>
        );
      case 'run':
        return (
          <AnchorLink to="/runs/$runId" params={{ runId: id }}>
            {name}
          </AnchorLink>
        );
      case 'memory_block':
        return agentId ? (
          <AnchorLink to="/memory" search={{ agentId, userId: typeof detail.userId === 'string' ? detail.userId : undefined }}>
            {name}
          </AnchorLink>
        ) : null;
      default:
        return null;
    }
  })();
  return (
    <>
      {kind} {link ?? <span title={id}>{name}</span>}
      {event.resourceType === 'memory_block' && agentId && <> of {nameOf(names, agentId)}</>}
    </>
  );
}

/**
 * The tenant's audit log (GET /api/v1/audit-events, settings:read), newest first: when, the action,
 * what it touched and who, by name where the page can learn it (agents, API keys, knowledge bases),
 * filtered by action and resource type.
 */
export function AuditLog() {
  const client = useClient();
  const names = useNames();
  const [action, setAction] = useState('');
  const [resourceType, setResourceType] = useState<string | null>(null);
  const [page, setPage] = useState(1);
  const events = useQuery({
    queryKey: ['audit', action, resourceType, page],
    placeholderData: keepPreviousData,
    queryFn: async () => {
      const query = { limit: EVENTS_SHOWN, action: action.trim() || undefined, resourceType: resourceType ?? undefined };
      // The SDK's iterator starts at the first page: the page shown is asked for directly.
      const answer = await client.http.json<{ events: AuditEvent[]; total: number }>('GET', '/api/v1/audit-events', {
        query: { ...query, page },
      });
      return { items: answer.events, total: answer.total };
    },
  });
  const pages = events.data ? Math.max(1, Math.ceil(events.data.total / EVENTS_SHOWN)) : 1;
  const known = names.data ?? new Map<string, string>();
  return (
    <Stack>
      <Group align="end">
        <TextInput
          label="Action"
          placeholder="agent.created"
          value={action}
          onChange={(e) => {
            setAction(e.currentTarget.value);
            setPage(1);
          }}
        />
        <Select
          label="Resource type"
          placeholder="any"
          clearable
          data={RESOURCE_TYPES}
          value={resourceType}
          onChange={(v) => {
            setResourceType(v);
            setPage(1);
          }}
        />
      </Group>
      {events.error && <Alert color="red">{messageOf(events.error)}</Alert>}
      {events.data && (
        <Text size="sm" c="dimmed" data-testid="audit-count">
          {events.data.total === 0
            ? 'No events match.'
            : events.data.total > EVENTS_SHOWN
              ? `Events ${(page - 1) * EVENTS_SHOWN + 1} to ${(page - 1) * EVENTS_SHOWN + events.data.items.length} of ${events.data.total}, newest first.`
              : `${events.data.total} event${events.data.total === 1 ? '' : 's'}.`}
        </Text>
      )}
      <Table.ScrollContainer minWidth={700}>
        <Table striped aria-label="Audit events: when, action, resource, who">
          <Table.Tbody>
            {(events.data?.items ?? []).map((e) => (
              <Table.Tr key={e.id} data-testid="audit-event">
                <Table.Td>
                  <When iso={e.createdAt} />
                </Table.Td>
                <Table.Td>
                  <Code>{e.action}</Code>
                </Table.Td>
                <Table.Td>
                  <Resource event={e} names={known} />
                </Table.Td>
                <Table.Td>{actorOf(known, e)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {pages > 1 && <Pagination total={pages} value={page} onChange={setPage} aria-label="Audit log pages" />}
    </Stack>
  );
}
