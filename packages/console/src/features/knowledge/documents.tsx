import type { KnowledgeDocument } from '@agentry/client';
import { Alert, Badge, Button, Group, Modal, Pagination, Progress, Stack, Table, Text, Tooltip } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { sizeOf } from '../../code-call';
import { apiPath } from '../../lib/api-path';
import { MAX_DOCUMENT_BYTES, POLL_MS, STATUS_COLORS, tooLarge, unsettled, uploadProblem, useOnSettled } from './shared';

const PAGE_SIZE = 50;

type DocumentPage = { documents: KnowledgeDocument[]; total: number };

/**
 * A page of the base's documents, asked again every second while any of them is queued or indexing
 * and no more once all have settled; a settled document refreshes the base (its searchable chunks).
 */
function useDocuments(baseId: string, page: number) {
  const client = useClient();
  const queryClient = useQueryClient();
  const documents = useQuery({
    queryKey: ['knowledge', baseId, 'documents', page],
    queryFn: () =>
      client.http.json<DocumentPage>('GET', apiPath`/api/v1/knowledge-bases/${baseId}/documents`, { query: { page, limit: PAGE_SIZE } }),
    refetchInterval: (query) => (query.state.data?.documents.some((d) => unsettled(d.status)) ? POLL_MS : false),
  });
  const underWay = documents.data?.documents.filter((d) => unsettled(d.status)).length ?? 0;
  // A settled document changes the base's searchable chunks.
  useOnSettled(underWay, () => void queryClient.invalidateQueries({ queryKey: ['knowledge', baseId], exact: true }));
  return documents;
}

function StatusBadge({ document }: { document: KnowledgeDocument }) {
  return (
    <Stack gap={2}>
      <Group gap={4} wrap="nowrap">
        <Badge color={STATUS_COLORS[document.status]} variant="light" data-testid="document-status">
          {document.status}
        </Badge>
        {document.status === 'indexing' && <Progress value={document.progress} w={60} aria-label={`${document.progress}% indexed`} />}
      </Group>
      {document.status === 'failed' && document.failureReason && (
        <Text size="xs" c="red" data-testid="failure-reason">
          {document.failureReason}
        </Text>
      )}
      {document.status !== 'ready' && document.indexedVersion !== null && (
        <Text size="xs" c="dimmed">
          version {document.indexedVersion} is searchable meanwhile
        </Text>
      )}
    </Stack>
  );
}

/** A new version of the document from a chosen file: uploaded (POST /api/v1/files), then PUT with its id. */
function ReplaceButton({ baseId, document, denied }: { baseId: string; document: KnowledgeDocument; denied: string | null }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const input = useRef<HTMLInputElement>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const replace = useMutation({
    mutationFn: async (file: File) => {
      if (file.size > MAX_DOCUMENT_BYTES) throw new Error(tooLarge(file));
      const uploaded = await client.files.upload(file);
      // The new version keeps the document's source, tags and metadata; its title is the new file's own.
      return client.knowledge.documents.replace(baseId, document.id, {
        fileId: uploaded.id,
        sourceUrl: document.sourceUrl,
        tags: document.tags,
        metadata: document.metadata as Record<string, string | number | boolean | null>,
      });
    },
    onMutate: () => setProblem(null),
    onError: (err, file) => setProblem(uploadProblem(file, err)),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['knowledge', baseId, 'documents'] }),
  });
  const name = document.title ?? document.filename ?? document.id;
  return (
    <>
      <input
        ref={input}
        type="file"
        hidden
        aria-label={`New version of ${name}`}
        onChange={(e) => {
          const file = e.currentTarget.files?.[0];
          e.currentTarget.value = '';
          if (file) replace.mutate(file);
        }}
      />
      <Tooltip label={denied ?? 'upload a file as the next version'}>
        <Button size="xs" variant="default" disabled={!!denied} loading={replace.isPending} onClick={() => input.current?.click()}>
          Replace…
        </Button>
      </Tooltip>
      {problem && (
        <Text size="xs" c="red">
          {problem}
        </Text>
      )}
    </>
  );
}

/** The base's documents: status (the reason of a failure), version, size, updated; replace and delete (confirmed). */
export function DocumentsTable({ baseId }: { baseId: string }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const denied = useDenied()('agents:write');
  const [page, setPage] = useState(1);
  const [deleting, setDeleting] = useState<KnowledgeDocument | null>(null);
  const documents = useDocuments(baseId, page);
  const remove = useMutation({
    mutationFn: (id: string) => client.knowledge.documents.delete(baseId, id),
    onSuccess: () => setDeleting(null),
    onSettled: () => {
      void queryClient.invalidateQueries({ queryKey: ['knowledge', baseId] });
      void queryClient.invalidateQueries({ queryKey: ['knowledge', 'bases'] });
    },
  });
  const rows = documents.data?.documents ?? [];
  const nameOf = (d: KnowledgeDocument) => d.title ?? d.filename ?? 'untitled';

  return (
    <Stack gap="xs">
      {documents.error && <Alert color="red">{messageOf(documents.error)}</Alert>}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={700}>
          <Table striped>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Document</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Version</Table.Th>
                <Table.Th>Size</Table.Th>
                <Table.Th>Updated</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((d) => (
                <Table.Tr key={d.id} data-testid="document" data-document-id={d.id}>
                  <Table.Td>
                    <Text size="sm" fw={500}>
                      {nameOf(d)}
                    </Text>
                    <Text size="xs" c="dimmed">
                      {[
                        d.filename !== d.title ? d.filename : null,
                        d.mediaType,
                        d.status === 'ready' ? `${d.chunkCount} ${d.chunkCount === 1 ? 'chunk' : 'chunks'}` : null,
                      ]
                        .filter(Boolean)
                        .join(' · ')}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <StatusBadge document={d} />
                  </Table.Td>
                  <Table.Td>{d.version}</Table.Td>
                  <Table.Td>{sizeOf(d.byteSize)}</Table.Td>
                  <Table.Td>{new Date(d.updatedAt).toLocaleString()}</Table.Td>
                  <Table.Td>
                    <Group gap="xs" wrap="nowrap" justify="end">
                      <ReplaceButton baseId={baseId} document={d} denied={denied} />
                      <Tooltip label={denied} disabled={!denied}>
                        <Button
                          size="xs"
                          variant="subtle"
                          color="red"
                          disabled={!!denied}
                          onClick={() => {
                            remove.reset();
                            setDeleting(d);
                          }}
                        >
                          Delete…
                        </Button>
                      </Tooltip>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {documents.data?.total === 0 && <Text c="dimmed">No documents yet: drop files above, or add a text.</Text>}
      {documents.data && documents.data.total > PAGE_SIZE && (
        <Pagination total={Math.ceil(documents.data.total / PAGE_SIZE)} value={page} onChange={setPage} />
      )}
      <Modal opened={deleting !== null} onClose={() => setDeleting(null)} title="Delete document">
        <Stack>
          <Text>
            Delete <b>{deleting && nameOf(deleting)}</b>? Its passages leave search at once; agents can no longer cite it.
          </Text>
          {remove.error && <Alert color="red">{messageOf(remove.error)}</Alert>}
          <Group justify="end">
            <Button variant="default" onClick={() => setDeleting(null)}>
              Cancel
            </Button>
            <Button color="red" loading={remove.isPending} onClick={() => deleting && remove.mutate(deleting.id)}>
              Delete
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
