import { Anchor, Stack, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useClient } from '../../api';
import { AnchorLink } from '../../links';
import { runQuery } from '../runs/queries';
import { asCitations, type Citation, passageLink } from './shared';

/** Each passage once (a run may search twice and cite the same chunk), in the order first cited. */
function distinct(citations: Citation[]): Citation[] {
  const seen = new Set<string>();
  return citations.filter((c) => {
    const key = `${c.knowledgeBaseId}/${c.documentId}/${c.position}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The passages a finished answer drew on, from its run's record: title, where in the document, snippet; each links to the passage. */
function CitationList({ citations }: { citations: Citation[] }) {
  const shown = distinct(citations);
  if (!shown.length) return null;
  return (
    <Stack gap={4} mt="xs" data-testid="citations" aria-label="Sources">
      <Text size="xs" fw={600}>
        Sources
      </Text>
      {shown.map((c, i) => (
        <Stack key={`${c.knowledgeBaseId}/${c.documentId}/${c.position}`} gap={0} data-testid="citation">
          <Text size="sm">
            [{i + 1}]{' '}
            <AnchorLink {...passageLink(c)} size="sm">
              {c.title ?? 'untitled'}
            </AnchorLink>{' '}
            <Text span size="xs" c="dimmed">
              {[c.headingPath?.join(' › '), `position ${c.position}`].filter(Boolean).join(' · ')}
            </Text>
          </Text>
          {c.snippet && (
            <Text size="xs" c="dimmed" lineClamp={2}>
              {c.snippet}
            </Text>
          )}
          {c.sourceUrl && /^https?:\/\//i.test(c.sourceUrl) && (
            <Anchor href={c.sourceUrl} target="_blank" rel="noreferrer noopener" size="xs">
              {c.sourceUrl}
            </Anchor>
          )}
        </Stack>
      ))}
    </Stack>
  );
}

/** A run's citations (GET /api/v1/runs/:id, shared with the turn's cost line): nothing while it has none. */
export function RunCitations({ runId }: { runId: string }) {
  const client = useClient();
  const run = useQuery({ ...runQuery(client, runId), staleTime: 60_000 });
  return <CitationList citations={asCitations(run.data?.citations)} />;
}
