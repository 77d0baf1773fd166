import { Alert, Stack, Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { messageOf, useClient } from '../../api';
import { knowledgeUsageQuery } from './queries';

const KINDS: Record<string, string> = {
  ingestion: 'documents embedded',
  query: 'search queries embedded',
  rerank: 'search results re-ranked',
};

/**
 * The tokens knowledge spent with providers in the period, by kind and model (docs/knowledge.md,
 * "Usage"): beside runs' cost, not in it. The built-in embedding spends none.
 */
export function KnowledgeTokens({ from, to }: { from: string; to: string }) {
  const client = useClient();
  const usage = useQuery(knowledgeUsageQuery(client, from, to));
  const totals = new Map<string, { kind: string; model: string; calls: number; inputTokens: number; outputTokens: number }>();
  for (const row of usage.data?.rows ?? []) {
    const key = `${row.kind}\u0000${row.model}`;
    const total = totals.get(key) ?? { kind: row.kind, model: row.model, calls: 0, inputTokens: 0, outputTokens: 0 };
    total.calls += row.calls;
    total.inputTokens += row.inputTokens;
    total.outputTokens += row.outputTokens;
    totals.set(key, total);
  }
  return (
    <Stack gap="xs">
      <Text fw={600}>Knowledge tokens</Text>
      {usage.error && <Alert color="red">{messageOf(usage.error)}</Alert>}
      {usage.data && !totals.size && (
        <Text size="sm" c="dimmed">
          No provider tokens spent by knowledge bases in this period (the built-in embedding spends none).
        </Text>
      )}
      {totals.size > 0 && (
        <Table.ScrollContainer minWidth={480}>
          <Table data-testid="knowledge-tokens">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Spent on</Table.Th>
                <Table.Th>Model</Table.Th>
                <Table.Th>Calls</Table.Th>
                <Table.Th>Input tokens</Table.Th>
                <Table.Th>Output tokens</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {[...totals.values()].map((t) => (
                <Table.Tr key={`${t.kind}/${t.model}`} data-testid="knowledge-tokens-row">
                  <Table.Td>{KINDS[t.kind] ?? t.kind}</Table.Td>
                  <Table.Td>{t.model}</Table.Td>
                  <Table.Td>{t.calls}</Table.Td>
                  <Table.Td>{t.inputTokens}</Table.Td>
                  <Table.Td>{t.outputTokens}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
