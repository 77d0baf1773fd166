import { Badge, Group, Paper, Stack, Text, Title } from '@mantine/core';
import { AnchorLink } from '../../links';
import { asCitations, passageLink } from '../knowledge/shared';
import { formatCount } from './format';

/** The passages the run's answer drew on, as its tools cited them (knowledge_search: docs/knowledge.md), each a link to the passage. */
export function Citations({ citations }: { citations: readonly unknown[] }) {
  const cited = asCitations(citations);
  if (!cited.length) return null;
  return (
    <Stack gap="xs">
      <Title order={4}>Citations</Title>
      {cited.map((c, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: one run's citations are fixed once it ended, in its tools' order
        <Paper key={i} withBorder p="xs" data-testid="citation">
          <Group gap="xs" justify="space-between" wrap="nowrap">
            <AnchorLink {...passageLink(c)} size="sm" fw={600}>
              {c.title || c.documentId}
            </AnchorLink>
            <Group gap={4} wrap="nowrap">
              <Badge variant="light" size="sm">{`position ${formatCount(c.position)}`}</Badge>
              <Badge variant="outline" size="sm">{`score ${c.score.toFixed(3)}`}</Badge>
            </Group>
          </Group>
          {c.headingPath.length > 0 && (
            <Text size="xs" c="dimmed">
              {c.headingPath.join(' › ')}
            </Text>
          )}
          {c.snippet && (
            <Text size="sm" lineClamp={4} style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
              {c.snippet}
            </Text>
          )}
        </Paper>
      ))}
    </Stack>
  );
}
