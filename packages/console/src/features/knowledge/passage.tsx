import { AgentryError } from '@agentry/client';
import { Alert, Badge, Button, Card, CloseButton, Group, ScrollArea, Stack, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useEffect, useRef } from 'react';
import { messageOf, useClient } from '../../api';
import { whereIn } from './search-panel';

/**
 * The passage a citation points at (`?document=<id>&position=<n>`): the text of that chunk of the
 * document's searchable version, with the chunks before and after a click away.
 */
export function PassageView({ baseId, documentId, position }: { baseId: string; documentId: string; position: number }) {
  const client = useClient();
  const navigate = useNavigate({ from: '/knowledge/$baseId' });
  const card = useRef<HTMLDivElement>(null);
  const chunk = useQuery({
    queryKey: ['knowledge', baseId, 'chunk', documentId, position],
    queryFn: () => client.knowledge.documents.chunk(baseId, documentId, position),
    retry: false,
  });
  useEffect(() => {
    card.current?.scrollIntoView?.({ block: 'nearest' });
  }, []);
  const go = (to: number) => navigate({ search: { document: documentId, position: to } });
  const close = () => navigate({ search: {} });
  const gone = chunk.error instanceof AgentryError && chunk.error.status === 404;

  return (
    <Card withBorder ref={card} data-testid="passage" aria-label="Cited passage">
      <Stack gap="xs">
        <Group justify="space-between" wrap="nowrap">
          <Group gap="xs">
            <Badge variant="light">passage</Badge>
            <Text fw={600}>{chunk.data ? (chunk.data.title ?? 'untitled') : 'Loading…'}</Text>
          </Group>
          <CloseButton aria-label="Close the passage" onClick={close} />
        </Group>
        {gone && (
          <Alert color="orange" data-testid="passage-gone">
            This passage is not in the base any more (the document was deleted or changed): {messageOf(chunk.error)}
          </Alert>
        )}
        {chunk.error && !gone && <Alert color="red">{messageOf(chunk.error)}</Alert>}
        {chunk.data && (
          <>
            <Text size="xs" c="dimmed">
              {whereIn(chunk.data)} of {chunk.data.chunkCount} · version {chunk.data.version}
              {chunk.data.sourceUrl && /^https?:\/\//i.test(chunk.data.sourceUrl) && (
                <>
                  {' · '}
                  <a href={chunk.data.sourceUrl} target="_blank" rel="noreferrer noopener">
                    source
                  </a>
                </>
              )}
            </Text>
            <ScrollArea.Autosize mah={360}>
              <Text style={{ whiteSpace: 'pre-wrap' }} data-testid="passage-text">
                {chunk.data.text}
              </Text>
            </ScrollArea.Autosize>
            <Group gap="xs">
              <Button size="xs" variant="default" disabled={position === 0} onClick={() => go(position - 1)}>
                ‹ Previous passage
              </Button>
              <Button size="xs" variant="default" disabled={position + 1 >= chunk.data.chunkCount} onClick={() => go(position + 1)}>
                Next passage ›
              </Button>
            </Group>
          </>
        )}
      </Stack>
    </Card>
  );
}
