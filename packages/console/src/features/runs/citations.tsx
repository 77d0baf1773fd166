import { Anchor, Badge, Group, Paper, Stack, Text, Title } from '@mantine/core';
import { routerBasePath } from '../../lib/session';
import { formatCount } from './format';

/** A passage the run's answer drew on, as its tool cited it (knowledge_search: docs/knowledge.md). */
interface Citation {
  knowledgeBaseId?: unknown;
  documentId?: unknown;
  title?: unknown;
  sourceUrl?: unknown;
  position?: unknown;
  headingPath?: unknown;
  score?: unknown;
  snippet?: unknown;
}

const text = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');

/** Where the knowledge page shows the passage: its base, its document, the chunk's position. */
function citationHref(c: Citation): string | null {
  const base = text(c.knowledgeBaseId);
  const document = text(c.documentId);
  if (!base || !document) return null;
  const query = new URLSearchParams({ document, ...(text(c.position) ? { position: text(c.position) } : {}) });
  return `${routerBasePath()}/knowledge/${encodeURIComponent(base)}?${query}`;
}

export function Citations({ citations }: { citations: readonly Record<string, unknown>[] }) {
  if (!citations.length) return null;
  return (
    <Stack gap="xs">
      <Title order={4}>Citations</Title>
      {(citations as readonly Citation[]).map((c, i) => {
        const href = citationHref(c);
        const title = text(c.title) || text(c.documentId) || 'passage';
        const heading = Array.isArray(c.headingPath) ? c.headingPath.map(text).filter(Boolean).join(' › ') : '';
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: one run's citations are fixed once it ended, in its tools' order
          <Paper key={i} withBorder p="xs" data-testid="citation">
            <Group gap="xs" justify="space-between" wrap="nowrap">
              {href ? (
                <Anchor href={href} size="sm" fw={600}>
                  {title}
                </Anchor>
              ) : (
                <Text size="sm" fw={600}>
                  {title}
                </Text>
              )}
              <Group gap={4} wrap="nowrap">
                {typeof c.position === 'number' && <Badge variant="light" size="sm">{`position ${formatCount(c.position)}`}</Badge>}
                {typeof c.score === 'number' && <Badge variant="outline" size="sm">{`score ${c.score.toFixed(3)}`}</Badge>}
              </Group>
            </Group>
            {heading && (
              <Text size="xs" c="dimmed">
                {heading}
              </Text>
            )}
            {text(c.snippet) && (
              <Text size="sm" lineClamp={4} style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
                {text(c.snippet)}
              </Text>
            )}
          </Paper>
        );
      })}
    </Stack>
  );
}
