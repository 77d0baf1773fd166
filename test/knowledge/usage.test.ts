import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { embeddingsWithUsage, providerEnv, startAimock, wordCount } from '../helpers/aimock.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { addReadyDocument } from '../helpers/knowledge.js';
import { sample } from '../metrics/helpers.js';

/**
 * Knowledge's tokens in the tenant's usage (issue 38): what a provider embedding spends at ingestion
 * and for a search's query, and what a re-ranking model spends, recorded by model and kind with the
 * provider's own counts, and by the run when an agent's knowledge_search spent them
 * (GET /api/v1/knowledge-usage). The built-in embedding calls no provider and records nothing.
 * Embeddings come from aimock behind a proxy that reports each text's words as its tokens, as OpenAI's
 * usage.prompt_tokens would; the re-ranking model is aimock's, with the usage its fixtures say.
 */

const EMBEDDING = 'openai/text-embedding-3-small';
const RANKER = 'openai-compatible/ranker';
let mock: LLMock;
let provider: Awaited<ReturnType<typeof embeddingsWithUsage>>;
let t: TestApp;
let key: string;

const createBase = async (body: {
  name: string;
  embeddingModel?: string;
  rerankModel?: string;
  chunking?: { maxChars: number; overlapChars: number };
}) => {
  const { data, error, response } = await t.api(key).POST('/api/v1/knowledge-bases', { body });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!.id;
};
const addReady = (baseId: string, content: string) => addReadyDocument(t.api(key), baseId, { content });
const chunkText = async (baseId: string, documentId: string) =>
  (
    await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}/chunks/{position}', {
      params: { path: { id: baseId, documentId, position: 0 } },
    })
  ).data!.text;
const usage = async (query: { runId?: string } = {}) => {
  const { data, error, response } = await t.api(key).GET('/api/v1/knowledge-usage', { params: { query } });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!.rows;
};
const of = (rows: Awaited<ReturnType<typeof usage>>, baseId: string) =>
  rows.filter((r) => r.knowledgeBaseId === baseId).map(({ day: _, knowledgeBaseId: __, ...r }) => r);

beforeAll(async () => {
  mock = await startAimock();
  provider = await embeddingsWithUsage(mock);
  t = await startApp({ ...providerEnv(mock), OPENAI_BASE_URL: provider.url, METRICS_TOKEN: 'metrics-token-of-this-test' });
  ({ key } = await t.tenant('acme'));
});
afterAll(async () => {
  await t?.close();
  await provider?.stop();
  await mock?.stop();
});

describe('knowledge tokens in usage', () => {
  it('counts ingestion, a query’s embedding and re-ranking by model and kind, as the providers report them', async () => {
    const baseId = await createBase({ name: 'Roof', embeddingModel: EMBEDDING, rerankModel: RANKER });
    const documentId = await addReady(baseId, 'Solar panels on the south roof are cleaned every spring by the caretaker.');
    const chunk = await chunkText(baseId, documentId);
    expect(of(await usage(), baseId)).toEqual([
      { kind: 'ingestion', model: EMBEDDING, calls: 1, inputTokens: wordCount(chunk), outputTokens: 0 },
    ]);

    mock.addFixture({
      match: { userMessage: 'Query: when are the panels cleaned' },
      response: { content: '{"ranking": [1]}', usage: { prompt_tokens: 120, completion_tokens: 7 } },
    });
    const { data, response } = await t.api(key).POST('/api/v1/knowledge-bases/{id}/search', {
      params: { path: { id: baseId } },
      body: { query: 'when are the panels cleaned' },
    });
    expect(response.status).toBe(200);
    expect(data!.rerank).toMatchObject({ status: 'reranked' });
    expect(of(await usage(), baseId)).toEqual([
      { kind: 'ingestion', model: EMBEDDING, calls: 1, inputTokens: wordCount(chunk), outputTokens: 0 },
      { kind: 'query', model: EMBEDDING, calls: 1, inputTokens: 5, outputTokens: 0 },
      { kind: 'rerank', model: RANKER, calls: 1, inputTokens: 120, outputTokens: 7 },
    ]);

    // A model that answers no ranking still spent its tokens: counted, and the search says it fell back.
    mock.addFixture({
      match: { userMessage: 'Query: caretaker' },
      response: { content: 'The first one.', usage: { prompt_tokens: 90, completion_tokens: 4 } },
    });
    const prose = await t.api(key).POST('/api/v1/knowledge-bases/{id}/search', {
      params: { path: { id: baseId } },
      body: { query: 'caretaker', mode: 'lexical' },
    });
    expect(prose.data!.rerank).toMatchObject({ status: 'failed', error: 'the re-ranking model did not answer a ranking' });
    expect(of(await usage(), baseId).find((r) => r.kind === 'rerank')).toEqual({
      kind: 'rerank',
      model: RANKER,
      calls: 2,
      inputTokens: 210,
      outputTokens: 11,
    });
    // The metrics count them too, by kind, provider, model and direction.
    const metrics = (await t.raw('GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-of-this-test' } })).text;
    const tokens = (kind: string, provider: string, model: string, direction: string) =>
      sample(metrics, 'agentry_knowledge_tokens_total', { kind, provider, model, direction });
    expect(tokens('rerank', 'openai-compatible', 'ranker', 'input')).toBe(210);
    expect(tokens('rerank', 'openai-compatible', 'ranker', 'output')).toBe(11);
    expect(tokens('query', 'openai', 'text-embedding-3-small', 'input')).toBe(5);
    expect(tokens('ingestion', 'openai', 'text-embedding-3-small', 'input')).toBe(wordCount(chunk));
  });

  it('counts what a document that failed mid-ingestion spent: its first batch, embedded before the second was refused', async () => {
    const baseId = await createBase({ name: 'Jam', embeddingModel: EMBEDDING, chunking: { maxChars: 200, overlapChars: 0 } });
    // 100 chunks, two batches of 64; the second holds the paragraph aimock refuses (400, not retried).
    const paragraphs = Array.from({ length: 100 }, (_, i) =>
      `Paragraph ${i} ${i === 90 ? 'REFUSED-BATCH' : 'harmless'} about marmalade. ${'Filler words keep it long. '.repeat(4)}`.trim(),
    );
    mock.onEmbedding(/REFUSED-BATCH/, { error: { message: 'input rejected', type: 'invalid_request_error' }, status: 400 });
    const { data } = await t
      .api(key)
      .POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body: { content: paragraphs.join('\n\n') } });
    await vi.waitFor(
      async () => {
        const doc = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
          params: { path: { id: baseId, documentId: data!.id } },
        });
        expect(doc.data?.status).toBe('failed');
      },
      { timeout: 30_000, interval: 50 },
    );
    const batches = provider.received.filter((body) => body.includes('marmalade')).map((body) => JSON.parse(body) as { input: string[] });
    expect(batches).toHaveLength(2);
    const firstBatchTokens = batches[0].input.reduce((sum, text) => sum + wordCount(text), 0);
    expect(of(await usage(), baseId)).toEqual([
      { kind: 'ingestion', model: EMBEDDING, calls: 1, inputTokens: firstBatchTokens, outputTokens: 0 },
    ]);
  });

  it('records nothing for the built-in embedding, which calls no provider', async () => {
    const baseId = await createBase({ name: 'Local' });
    await addReady(baseId, 'Gutters drain into the garden.');
    const { response } = await t.api(key).POST('/api/v1/knowledge-bases/{id}/search', {
      params: { path: { id: baseId } },
      body: { query: 'where do the gutters drain' },
    });
    expect(response.status).toBe(200);
    expect(of(await usage(), baseId)).toEqual([]);
  });

  it('attributes an agent’s knowledge_search to its run', async () => {
    const baseId = await createBase({ name: 'Garden', embeddingModel: EMBEDDING, rerankModel: RANKER });
    await addReady(baseId, 'Roses are pruned in early spring, just above an outward-facing bud.');
    mock.addFixture({
      match: { userMessage: 'Query: when are roses pruned' },
      response: { content: '{"ranking": [1]}', usage: { prompt_tokens: 50, completion_tokens: 3 } },
    });
    const agent = await t.agent(key, { name: 'Gardener', tools: [{ type: 'builtin', name: 'knowledge', knowledgeBases: [baseId] }] });
    const res = await execute(t, key, agent.id, {
      message: `/tool knowledge_search ${JSON.stringify({ query: 'when are roses pruned' })}`,
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.citations.length).toBe(1);
    const runId = res.data!.runId;
    expect(of(await usage({ runId }), baseId)).toEqual([
      { kind: 'query', model: EMBEDDING, calls: 1, inputTokens: 4, outputTokens: 0 },
      { kind: 'rerank', model: RANKER, calls: 1, inputTokens: 50, outputTokens: 3 },
    ]);
    // Only the run's: the document's ingestion is the base's, not the run's.
    expect((await usage({ runId })).every((r) => r.knowledgeBaseId === baseId && r.kind !== 'ingestion')).toBe(true);
  });

  it('refuses a period it cannot read, naming the field', async () => {
    const res = await t.raw('GET', '/api/v1/knowledge-usage?from=2026-03-01&to=2026-02-01', { key });
    expectProblem(res, 400, 'validation_failed');
    expect(res.text).toContain('"from"');
  });
});
