import { expect, vi } from 'vitest';
import type { TestApp } from './app.js';

/** Waits until `count` of the base's documents are `ready` (as its document list counts them). */
export async function documentsReady(
  api: ReturnType<TestApp['api']>,
  baseId: string,
  count: number,
  { timeout = 30_000, interval = 50 }: { timeout?: number; interval?: number } = {},
): Promise<void> {
  await vi.waitFor(
    async () => {
      const listed = await api.GET('/api/v1/knowledge-bases/{id}/documents', {
        params: { path: { id: baseId }, query: { status: 'ready', limit: 1 } },
      });
      expect(listed.data!.total).toBe(count);
    },
    { timeout, interval },
  );
}

/** Adds a document to the base and waits until it is `ready`; its id. */
export async function addReadyDocument(
  api: ReturnType<TestApp['api']>,
  baseId: string,
  body: { content: string; title?: string },
): Promise<string> {
  const { data, error, response } = await api.POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body });
  expect(response.status, JSON.stringify(error)).toBe(202);
  await vi.waitFor(
    async () => {
      const doc = await api.GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
        params: { path: { id: baseId, documentId: data!.id } },
      });
      expect(doc.data?.status).toBe('ready');
    },
    { timeout: 30_000, interval: 50 },
  );
  return data!.id;
}

interface VectorSearchAnswer {
  vectorIndex?: string;
  passages: { citation: { documentId: string; position: number; score: number } }[];
}

/**
 * How much of the exact top 10s a vector index's search keeps, over `queries`: each query searched
 * through `index` and with `exact: true`. What the index finds must come back as many and ranked by
 * its exact cosine.
 */
export async function keptOfExactTop10(
  search: (body: { query: string; mode: 'vector'; k: number; exact?: boolean }) => Promise<VectorSearchAnswer>,
  queries: string[],
  index: string,
): Promise<{ kept: number; compared: number }> {
  const passage = (p: VectorSearchAnswer['passages'][number]) => `${p.citation.documentId}:${p.citation.position}`;
  let kept = 0;
  let compared = 0;
  for (const query of queries) {
    const fast = await search({ query, mode: 'vector', k: 10 });
    const exact = await search({ query, mode: 'vector', k: 10, exact: true });
    expect(fast.vectorIndex).toBe(index);
    expect(exact.vectorIndex).toBe('exact');
    expect(fast.passages).toHaveLength(exact.passages.length);
    const exactScores = new Map(exact.passages.map((p) => [passage(p), p.citation.score]));
    for (const p of fast.passages) {
      const score = exactScores.get(passage(p));
      if (score !== undefined) {
        expect(p.citation.score).toBeCloseTo(score, 5);
        kept++;
      }
    }
    compared += exact.passages.length;
  }
  return { kept: kept / compared, compared };
}
