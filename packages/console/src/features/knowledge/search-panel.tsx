import type { KnowledgeSearchResult } from '@agentry/client';
import { Alert, Badge, Button, Card, Group, Highlight, NumberInput, SegmentedControl, Stack, Text, TextInput } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient } from '../../api';
import { placeErrors } from '../../lib/form-errors';
import { AnchorLink } from '../../links';
import { passageLink, queryWords } from './shared';

/** How the answer's vectors were compared (docs/knowledge.md, "Vector"), in words. */
const VECTOR_INDEX_NAMES = {
  'sqlite-vec': 'int8 sketches in sqlite-vec, then exactly',
  pgvector: 'pgvector’s HNSW index, then exactly',
  int8: 'int8 sketches at the query’s words, then exactly',
  'level-bits': 'sign and strength bits, then exactly',
  exact: 'every vector, exactly',
} as const;

type Mode = 'hybrid' | 'lexical' | 'vector';

/** The heading path and place of a passage: "Handbook › Leave · position 2". */
export function whereIn(citation: { headingPath: string[]; position: number }) {
  return [citation.headingPath.join(' › '), `position ${citation.position}`].filter(Boolean).join(' · ');
}

/** Try a search: query, mode and k as an agent's knowledge_search would send them; passages ranked, best first. */
export function SearchPanel({ baseId, searchable }: { baseId: string; searchable: boolean }) {
  const client = useClient();
  const [query, setQuery] = useState('');
  const [mode, setMode] = useState<Mode>('hybrid');
  const [k, setK] = useState<number | string>(5);
  const search = useMutation({
    mutationFn: (body: { query: string; mode: Mode; k: number }) =>
      client.knowledge.search(baseId, body).then((result): KnowledgeSearchResult & { query: string } => ({ ...result, query: body.query })),
  });
  const errors = placeErrors(search.error, { query: 'Query', mode: 'Mode', k: 'Passages' }).fields;
  const atField = !!(errors.query || errors.k || errors.mode);
  const result = search.data;
  const words = result ? queryWords(result.query) : [];

  return (
    <Stack gap="sm">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          search.mutate({ query: query.trim(), mode, k: Number(k) });
        }}
      >
        <Group align="end" wrap="wrap">
          <TextInput
            style={{ flex: 1, minWidth: 240 }}
            label="Query"
            placeholder="a question, as an agent would ask it"
            value={query}
            onChange={(e) => setQuery(e.currentTarget.value)}
            error={errors.query}
          />
          <Stack gap={4}>
            <Text size="sm" fw={500} id="search-mode-label">
              Mode
            </Text>
            <SegmentedControl
              aria-labelledby="search-mode-label"
              value={mode}
              onChange={(v) => setMode(v as Mode)}
              data={['hybrid', 'lexical', 'vector']}
            />
          </Stack>
          <NumberInput label="Passages (k)" min={1} max={50} w={120} value={k} onChange={setK} error={errors.k} />
          <Button type="submit" disabled={!query.trim()} loading={search.isPending}>
            Search
          </Button>
        </Group>
      </form>
      {search.error && !atField && <Alert color="red">{messageOf(search.error)}</Alert>}
      {result && result.passages.length === 0 && (
        <Text c="dimmed" data-testid="search-empty">
          {searchable
            ? `No passage matches “${result.query}”. Try other words, or the ${result.mode === 'lexical' ? 'hybrid' : 'lexical'} mode.`
            : 'Nothing is searchable yet: add a document and wait until it is ready.'}
        </Text>
      )}
      {result && result.passages.length > 0 && (
        <Stack gap="xs" data-testid="search-results">
          <Text size="xs" c="dimmed">
            {result.passages.length} passages, {result.mode} search
            {result.vectorIndex !== 'none' && ` (vectors compared by ${VECTOR_INDEX_NAMES[result.vectorIndex]})`}
          </Text>
          {result.passages.map(({ citation }, rank) => (
            <Card key={`${citation.documentId}:${citation.position}`} withBorder p="sm" data-testid="search-passage">
              <Group gap="xs" justify="space-between" wrap="nowrap">
                <Group gap="xs">
                  <Badge variant="light">#{rank + 1}</Badge>
                  <AnchorLink {...passageLink(citation)} fw={600}>
                    {citation.title ?? 'untitled'}
                  </AnchorLink>
                </Group>
                <Text size="xs" c="dimmed" ff="monospace">
                  score {citation.score.toFixed(4)}
                </Text>
              </Group>
              <Text size="xs" c="dimmed">
                {whereIn(citation)}
              </Text>
              <Highlight size="sm" mt={4} highlight={words} data-testid="passage-snippet">
                {citation.snippet}
              </Highlight>
            </Card>
          ))}
        </Stack>
      )}
    </Stack>
  );
}
