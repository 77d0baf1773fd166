import type { KnowledgeBase, KnowledgeDocument } from '@agentry/client';
import { Alert, Badge, Button, Group, Menu, Pagination, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { apiPath } from '../../lib/api-path';
import { AnchorLink } from '../../links';
import { BaseFormModal } from './base-form';
import { DeleteBaseModal } from './delete-base';
import { POLL_MS, STATUS_COLORS, useOnSettled } from './shared';

const PAGE_SIZE = 20;

/** How many of a base's documents are in `status`: a page of one, for its total; asked again while `poll` says. */
function useStatusTotal(baseId: string, status: KnowledgeDocument['status'], poll: (total: number) => boolean) {
  const client = useClient();
  return useQuery({
    queryKey: ['knowledge', baseId, 'status-total', status],
    queryFn: () =>
      client.http.json<{ total: number }>('GET', apiPath`/api/v1/knowledge-bases/${baseId}/documents`, {
        query: { status, limit: 1 },
      }),
    refetchInterval: (query) => (poll(query.state.data?.total ?? 0) ? POLL_MS : false),
  });
}

/** The documents still being ingested and those that failed, asked again while any is under way. */
function StatusSummary({ base }: { base: KnowledgeBase }) {
  const queryClient = useQueryClient();
  const queued = useStatusTotal(base.id, 'queued', (n) => n > 0);
  const indexing = useStatusTotal(base.id, 'indexing', (n) => n > 0);
  const failed = useStatusTotal(base.id, 'failed', () => false);
  const underWay = (queued.data?.total ?? 0) + (indexing.data?.total ?? 0);
  // A document that settled changes the failed count and the base's searchable chunks.
  useOnSettled(underWay, () => {
    void queryClient.invalidateQueries({ queryKey: ['knowledge', base.id, 'status-total', 'failed'] });
    void queryClient.invalidateQueries({ queryKey: ['knowledge', 'bases'] });
  });
  if (base.documentCount === 0) return <Text size="sm">no documents</Text>;
  const ready = base.documentCount - underWay - (failed.data?.total ?? 0);
  return (
    <Group gap={4} data-testid="base-status">
      <Text size="sm">{base.documentCount === 1 ? '1 document' : `${base.documentCount} documents`}</Text>
      {ready > 0 && (
        <Badge color={STATUS_COLORS.ready} variant="light">
          {ready} ready
        </Badge>
      )}
      {underWay > 0 && (
        <Badge color={STATUS_COLORS.indexing} variant="light">
          {underWay} indexing
        </Badge>
      )}
      {(failed.data?.total ?? 0) > 0 && (
        <Badge color={STATUS_COLORS.failed} variant="light">
          {failed.data?.total} failed
        </Badge>
      )}
    </Group>
  );
}

/** Knowledge bases: their model and documents; create, edit, delete (confirmed by name). */
export function KnowledgePage() {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const navigate = useNavigate();
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<KnowledgeBase | 'new' | null>(null);
  const [deleting, setDeleting] = useState<KnowledgeBase | null>(null);
  const list = useQuery({
    queryKey: ['knowledge', 'bases', page],
    queryFn: () =>
      client.http.json<{ knowledgeBases: KnowledgeBase[]; total: number }>('GET', '/api/v1/knowledge-bases', {
        query: { page, limit: PAGE_SIZE },
      }),
  });
  const bases = list.data?.knowledgeBases ?? [];

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Knowledge
        </Title>
        <Tooltip label={denied} disabled={!denied}>
          <Button disabled={!!denied} onClick={() => setEditing('new')}>
            New knowledge base
          </Button>
        </Tooltip>
      </Group>
      <Text size="sm" c="dimmed">
        Documents your agents search and cite: give an agent the knowledge tool group to let it search them.
      </Text>
      {list.error && <Alert color="red">{messageOf(list.error)}</Alert>}
      {bases.length > 0 && (
        <Table.ScrollContainer minWidth={700}>
          <Table striped highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Embedding model</Table.Th>
                <Table.Th>Documents</Table.Th>
                <Table.Th>Searchable chunks</Table.Th>
                <Table.Th>Updated</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {bases.map((base) => (
                <Table.Tr key={base.id} data-testid="knowledge-base">
                  <Table.Td>
                    <AnchorLink to="/knowledge/$baseId" params={{ baseId: base.id }}>
                      {base.name}
                    </AnchorLink>
                    {base.description && (
                      <Text size="xs" c="dimmed" lineClamp={1}>
                        {base.description}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm" ff="monospace">
                      {base.embeddingModel}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <StatusSummary base={base} />
                  </Table.Td>
                  <Table.Td>{base.chunkCount}</Table.Td>
                  <Table.Td>{new Date(base.updatedAt).toLocaleString()}</Table.Td>
                  <Table.Td>
                    <Menu position="bottom-end">
                      <Menu.Target>
                        <Button size="xs" variant="default" aria-label={`Actions for ${base.name}`}>
                          ⋯
                        </Button>
                      </Menu.Target>
                      <Menu.Dropdown>
                        <Menu.Item disabled={!!denied} title={denied ?? undefined} onClick={() => setEditing(base)}>
                          Edit…
                        </Menu.Item>
                        <Menu.Item color="red" disabled={!!denied} title={denied ?? undefined} onClick={() => setDeleting(base)}>
                          Delete…
                        </Menu.Item>
                      </Menu.Dropdown>
                    </Menu>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {list.data?.total === 0 && (
        <Text c="dimmed">No knowledge bases yet: create one, then add documents to it (drop files, or write text).</Text>
      )}
      {list.data && list.data.total > PAGE_SIZE && (
        <Pagination total={Math.ceil(list.data.total / PAGE_SIZE)} value={page} onChange={setPage} />
      )}
      <BaseFormModal
        opened={editing !== null}
        base={editing === 'new' || editing === null ? undefined : editing}
        onClose={() => setEditing(null)}
        onSaved={(saved) => {
          const created = editing === 'new';
          setEditing(null);
          if (created) navigate({ to: '/knowledge/$baseId', params: { baseId: saved.id } });
        }}
      />
      <DeleteBaseModal base={deleting} onClose={() => setDeleting(null)} onDeleted={() => setDeleting(null)} />
    </Stack>
  );
}
