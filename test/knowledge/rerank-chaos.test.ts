import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { embeddingsWithUsage, providerEnv, startAimock } from '../helpers/aimock.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { documentsReady } from '../helpers/knowledge.js';

/**
 * A re-ranking model that hangs, refuses or answers garbage (issue 38): the search still ends, in the
 * fused order, and says the re-ranking failed and why; a silent model holds no search turn while it is
 * waited for. The timeout is KNOWLEDGE_RERANK_TIMEOUT_MS, short here, and aimock's chaos (a delay far
 * past it, 429s, 500s, malformed bodies) plays the model, reached through a pass-through proxy that
 * notes each request as it arrives: outcomes are asserted, never durations.
 */

const MODEL = 'openai-compatible/ranker';
const TIMEOUT_MS = 300;
let mock: LLMock;
let proxy: Awaited<ReturnType<typeof embeddingsWithUsage>>;
let t: TestApp;
let key: string;
let baseId: string;

const search = async (body: { query: string; rerank?: boolean }) => {
  const { data, error, response } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases/{id}/search', { params: { path: { id: baseId } }, body: { ...body, k: 3 } });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!;
};
const titles = (result: { passages: { citation: { title: string | null } }[] }) => result.passages.map((p) => p.citation.title);

beforeAll(async () => {
  mock = await startAimock();
  proxy = await embeddingsWithUsage(mock);
  // One search ranks at a time and none may wait: a search holding its turn would make the next a 503.
  t = await startApp({
    ...providerEnv(mock),
    OPENAI_COMPATIBLE_BASE_URL: proxy.url,
    KNOWLEDGE_RERANK_TIMEOUT_MS: String(TIMEOUT_MS),
    KNOWLEDGE_SEARCH_CONCURRENCY: '1',
    KNOWLEDGE_SEARCH_QUEUE: '0',
    MODEL_RETRY_BASE_MS: '1',
  });
  ({ key } = await t.tenant('acme'));
  const created = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Garden', rerankModel: MODEL } });
  baseId = created.data!.id;
  const documents = {
    Roses: 'Roses are pruned in early spring, just above an outward-facing bud.',
    Tomatoes: 'Tomatoes are pruned by pinching out the side shoots every week.',
    Hedges: 'Hedges are pruned twice a year, in late spring and late summer.',
  };
  for (const [title, content] of Object.entries(documents)) {
    await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body: { title, content } });
  }
  await documentsReady(t.api(key), baseId, 3);
});
afterAll(async () => {
  await t?.close();
  await proxy?.stop();
  await mock?.stop();
});

describe('a re-ranking model that does not answer well', () => {
  it('hangs: the search ends in the fused order saying the model did not answer in time, and holds no turn meanwhile', async () => {
    const query = 'when are hedges pruned';
    const fused = titles(await search({ query, rerank: false }));
    // aimock waits 5 s before answering: over fifteen times the timeout.
    mock.addFixture({
      match: { userMessage: `Query: ${query}` },
      response: { content: '{"ranking": [3, 2, 1]}' },
      chaos: { latencyMs: 5_000 },
    });
    const hanging = search({ query });
    await vi.waitFor(() => expect(proxy.received.filter((b) => b.includes(`Query: ${query}`))).toHaveLength(1), {
      timeout: 10_000,
      interval: 10,
    });
    // The model has been asked and not answered: the only turn is free, so another search ranks (no 503 search_busy).
    const other = await search({ query: 'tomato side shoots', rerank: false });
    expect(other.passages.length).toBeGreaterThan(0);
    const result = await hanging;
    expect(result.rerank).toEqual({
      model: MODEL,
      status: 'failed',
      candidates: 3,
      error: `the re-ranking model did not answer within ${TIMEOUT_MS} ms`,
    });
    expect(titles(result)).toEqual(fused);
  });

  it('answers 429 with a Retry-After past the time left, or 500: the fused order at once, in the provider’s words', async () => {
    const limited = 'pruning roses in spring';
    const fusedLimited = titles(await search({ query: limited, rerank: false }));
    mock.addFixture({
      match: { userMessage: `Query: ${limited}` },
      response: { error: { message: 'slow down', type: 'rate_limit_error' }, status: 429, retryAfter: 30 },
    });
    const rateLimited = await search({ query: limited });
    expect(rateLimited.rerank).toMatchObject({ model: MODEL, status: 'failed' });
    // Its Retry-After (30 s) ends after the time left: not waited for.
    expect(rateLimited.rerank!.error).toBe('the re-ranking model could not be asked: answered 429: slow down');
    expect(titles(rateLimited)).toEqual(fusedLimited);

    const down = 'pruning twice a year';
    const fusedDown = titles(await search({ query: down, rerank: false }));
    mock.addFixture({
      match: { userMessage: `Query: ${down}` },
      response: { error: { message: 'overloaded', type: 'server_error' }, status: 500 },
    });
    const failed = await search({ query: down });
    expect(failed.rerank).toMatchObject({ model: MODEL, status: 'failed' });
    expect(failed.rerank!.error).toBe('the re-ranking model could not be asked: answered 500: overloaded');
    expect(titles(failed)).toEqual(fusedDown);
  });

  it('answers a malformed body: the fused order, and the answer says so', async () => {
    const query = 'outward-facing bud';
    const fused = titles(await search({ query, rerank: false }));
    mock.addFixture({ match: { userMessage: `Query: ${query}` }, response: { content: '{"ranking": [1]}' }, chaos: { malformedRate: 1 } });
    const garbled = await search({ query });
    expect(garbled.rerank).toMatchObject({ model: MODEL, status: 'failed' });
    expect(garbled.rerank!.error).toMatch(/^the re-ranking model could not be asked: /);
    expect(titles(garbled)).toEqual(fused);
  });

  it('records no re-ranking tokens for answers that never came', async () => {
    const { data } = await t.api(key).GET('/api/v1/knowledge-usage', { params: { query: {} } });
    expect(data!.rows.filter((r) => r.kind === 'rerank')).toEqual([]);
  });
});
