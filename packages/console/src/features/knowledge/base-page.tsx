import { AgentryError } from '@agentry/client';
import { Alert, Button, Group, Stack, Text, Title, Tooltip } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { AnchorLink } from '../../links';
import { AddDocuments } from './add-documents';
import { BaseFormModal } from './base-form';
import { DeleteBaseModal } from './delete-base';
import { DocumentsTable } from './documents';
import { PassageView } from './passage';
import { SearchPanel } from './search-panel';

/**
 * One knowledge base: the passage a citation link points at (when the URL names one), its documents
 * (added by dropping files or writing text, each's ingestion followed live), and a search to try.
 */
export function KnowledgeBasePage() {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const navigate = useNavigate();
  const { baseId } = useParams({ from: '/app/knowledge/$baseId' });
  const { document, position } = useSearch({ from: '/app/knowledge/$baseId' });
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const base = useQuery({ queryKey: ['knowledge', baseId], queryFn: () => client.knowledge.get(baseId), retry: false });

  if (base.error) {
    const missing = base.error instanceof AgentryError && base.error.status === 404;
    return (
      <Stack>
        <Title order={1} size="h2">
          Knowledge
        </Title>
        <Alert color={missing ? 'orange' : 'red'}>
          {missing ? 'There is no such knowledge base: it was deleted, or the link is of another tenant.' : messageOf(base.error)}
        </Alert>
        <AnchorLink to="/knowledge">All knowledge bases</AnchorLink>
      </Stack>
    );
  }
  const data = base.data;

  return (
    <Stack>
      <Group justify="space-between" align="start">
        <Stack gap={2}>
          <AnchorLink to="/knowledge" size="sm">
            ‹ All knowledge bases
          </AnchorLink>
          <Title order={1} size="h2">
            {data?.name ?? 'Knowledge base'}
          </Title>
          {data?.description && <Text size="sm">{data.description}</Text>}
          {data && (
            <Text size="xs" c="dimmed" data-testid="base-figures">
              {data.embeddingModel} · {data.documentCount === 1 ? '1 document' : `${data.documentCount} documents`} · {data.chunkCount}{' '}
              searchable chunks · chunks of {data.chunking.maxChars} characters, {data.chunking.overlapChars} repeated
            </Text>
          )}
        </Stack>
        <Group gap="xs">
          <Tooltip label={denied} disabled={!denied}>
            <Button variant="default" disabled={!!denied || !data} onClick={() => setEditing(true)}>
              Edit…
            </Button>
          </Tooltip>
          <Tooltip label={denied} disabled={!denied}>
            <Button color="red" variant="light" disabled={!!denied || !data} onClick={() => setDeleting(true)}>
              Delete…
            </Button>
          </Tooltip>
        </Group>
      </Group>
      {document && position !== undefined && (
        <PassageView key={`${document}:${position}`} baseId={baseId} documentId={document} position={position} />
      )}
      <Title order={3}>Documents</Title>
      <AddDocuments baseId={baseId} />
      <DocumentsTable baseId={baseId} />
      <Title order={3}>Try a search</Title>
      <SearchPanel baseId={baseId} searchable={(data?.chunkCount ?? 0) > 0} />
      <BaseFormModal opened={editing} base={data} onClose={() => setEditing(false)} onSaved={() => setEditing(false)} />
      <DeleteBaseModal
        base={deleting && data ? data : null}
        onClose={() => setDeleting(false)}
        onDeleted={() => {
          setDeleting(false);
          navigate({ to: '/knowledge' });
        }}
      />
    </Stack>
  );
}
