import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { providerEnv, startAimock } from '../helpers/aimock.js';
import { startApp, type TestApp } from '../helpers/app.js';

/**
 * Provider embeddings (issue 38): a knowledge base whose embeddingModel is an OpenAI or
 * OpenAI-compatible model embeds through the real @ai-sdk packages against aimock, whose fallback
 * embedding of a text is deterministic (the same text, the same vector). Rate limits are retried;
 * a failure mid-ingestion, or a provider that stays down, fails the document with nothing of it
 * searchable; changing the model indexes every document again.
 */

let mock: LLMock;
let t: TestApp;
let key: string;

beforeAll(async () => {
  mock = await startAimock();
  // Retries wait 1 ms, 2 ms...: the test is about how many attempts, not how long.
  t = await startApp({ ...providerEnv(mock), MODEL_RETRY_BASE_MS: '1' });
  ({ key } = await t.tenant('acme'));
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});

const createBase = async (name: string, embeddingModel?: string) => {
  const { data, error, response } = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name, embeddingModel } });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!;
};
const addDocument = async (baseId: string, content: string) => {
  const { data, error, response } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body: { content } });
  expect(response.status, JSON.stringify(error)).toBe(202);
  return data!;
};
const getDocument = (baseId: string, documentId: string) =>
  t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', { params: { path: { id: baseId, documentId } } });
const settled = async (
  baseId: string,
  documentId: string,
  isSettled = (d: { status: string }) => ['ready', 'failed'].includes(d.status),
) => {
  let doc: Awaited<ReturnType<typeof getDocument>>['data'];
  await vi.waitFor(
    async () => {
      doc = (await getDocument(baseId, documentId)).data;
      expect(doc && isSettled(doc)).toBe(true);
    },
    { timeout: 30_000, interval: 50 },
  );
  return doc!;
};
const search = async (baseId: string, query: string, mode: 'lexical' | 'vector' | 'hybrid') => {
  const { data, error, response } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases/{id}/search', { params: { path: { id: baseId } }, body: { query, mode } });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!.passages;
};
/** The embedding requests aimock received whose texts include `text`. */
const embeddingCalls = (text: string) =>
  mock.getRequests().filter((r) => r.path.endsWith('/embeddings') && JSON.stringify(r.body ?? '').includes(text));

describe('provider embeddings', () => {
  it('embed chunks and queries through the configured provider (OpenAI and OpenAI-compatible)', async () => {
    for (const model of ['openai/text-embedding-3-small', 'openai-compatible/nomic-embed-text']) {
      const base = await createBase(`Provider ${model}`, model);
      expect(base.embeddingModel).toBe(model);
      const texts = ['Solar panels are cleaned every spring.', 'The roof was replaced in 2019.', 'Gutters drain into the garden.'];
      const ids = [];
      for (const text of texts) ids.push((await addDocument(base.id, text)).id);
      for (const id of ids) expect((await settled(base.id, id)).status).toBe('ready');
      expect(embeddingCalls('Solar panels are cleaned every spring.').length).toBeGreaterThan(0);
      // The same text embeds to the same vector: the passage itself is nearest.
      const passages = await search(base.id, 'The roof was replaced in 2019.', 'vector');
      expect(passages[0].citation.documentId).toBe(ids[1]);
      expect(passages[0].citation.score).toBeCloseTo(1, 5);
    }
  });

  it('retries a rate-limited call, then indexes the document', async () => {
    const base = await createBase('Rate limited', 'openai-compatible/nomic-embed-text');
    // One 429 for the next request (this document's first call), then aimock's fallback answers.
    mock.nextRequestError(429, { message: 'slow down', type: 'rate_limit_error' });
    const doc = await addDocument(base.id, 'RATELIMITED-ONCE the quarterly numbers.');
    expect((await settled(base.id, doc.id)).status).toBe('ready');
    expect(embeddingCalls('RATELIMITED-ONCE').length).toBeGreaterThanOrEqual(2);
  });

  it('fails a document whose provider stays down, after the configured attempts', async () => {
    const base = await createBase('Down', 'openai-compatible/nomic-embed-text');
    mock.onEmbedding(/PROVIDER-DOWN/, { error: { message: 'overloaded', type: 'server_error' }, status: 503 });
    const doc = await addDocument(base.id, 'PROVIDER-DOWN the document.');
    const failed = await settled(base.id, doc.id);
    expect(failed.status).toBe('failed');
    expect(failed.failureReason).toMatch(/503.*\(3 attempts\)/);
    expect(embeddingCalls('PROVIDER-DOWN')).toHaveLength(3);
    expect(await search(base.id, 'document', 'lexical')).toEqual([]);
  });

  it('leaves nothing searchable of a document that fails mid-ingestion (its second batch refused)', async () => {
    const { data: base } = await t.api(key).POST('/api/v1/knowledge-bases', {
      body: { name: 'Mid-way', embeddingModel: 'openai-compatible/nomic-embed-text', chunking: { maxChars: 200, overlapChars: 0 } },
    });
    // 100 paragraphs of ~140 characters, two of which never fit one chunk of 200: 100 chunks, two batches of 64; the poison is in the second.
    const paragraphs = Array.from({ length: 100 }, (_, i) =>
      `Paragraph ${i} ${i === 90 ? 'POISONED-BATCH' : 'harmless'} about marmalade. ${'Filler words keep it long. '.repeat(4)}`.trim(),
    );
    mock.onEmbedding(/POISONED-BATCH/, { error: { message: 'input rejected', type: 'invalid_request_error' }, status: 400 });
    const doc = await addDocument(base!.id, paragraphs.join('\n\n'));
    const failed = await settled(base!.id, doc.id);
    expect(failed).toMatchObject({ status: 'failed', indexedVersion: null, chunkCount: 0 });
    expect(failed.failureReason).toMatch(/400/);
    // The first batch was embedded, and still nothing of the document is searchable.
    const batches = mock.getRequests().filter((r) => r.path.endsWith('/embeddings') && JSON.stringify(r.body ?? '').includes('marmalade'));
    expect(batches.length).toBe(2);
    expect(await search(base!.id, 'marmalade', 'lexical')).toEqual([]);
    const got = await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: base!.id } } });
    expect(got.data).toMatchObject({ documentCount: 1, chunkCount: 0 });
  });

  it('indexes every document again when the base’s embedding model changes', async () => {
    const base = await createBase('Switching');
    const doc = await addDocument(base.id, 'SWITCHED-MODEL the handbook chapter.');
    expect((await settled(base.id, doc.id)).status).toBe('ready');
    expect(embeddingCalls('SWITCHED-MODEL')).toEqual([]);
    const patched = await t.api(key).PATCH('/api/v1/knowledge-bases/{id}', {
      params: { path: { id: base.id } },
      body: { embeddingModel: 'openai-compatible/nomic-embed-text' },
    });
    expect(patched.data!.embeddingModel).toBe('openai-compatible/nomic-embed-text');
    await vi.waitFor(() => expect(embeddingCalls('SWITCHED-MODEL').length).toBeGreaterThan(0), { timeout: 30_000, interval: 20 });
    const ready = await settled(base.id, doc.id, (d) => d.status === 'ready');
    expect(ready).toMatchObject({ version: 1, indexedVersion: 1 });
    const passages = await search(base.id, 'SWITCHED-MODEL the handbook chapter.', 'vector');
    expect(passages[0].citation.score).toBeCloseTo(1, 5);
  });

  it('serve an agent on a provider model: it calls knowledge_search, answers, and the run carries the citations', async () => {
    const base = await createBase('For the model', 'openai-compatible/nomic-embed-text');
    const doc = await addDocument(base.id, 'The warranty covers parts and labour for two years.');
    expect((await settled(base.id, doc.id)).status).toBe('ready');
    const message = 'how long is the warranty?';
    mock.addFixture({
      match: { userMessage: message, hasToolResult: false },
      response: { toolCalls: [{ name: 'knowledge_search', arguments: JSON.stringify({ query: 'warranty years', k: 3 }) }] },
    });
    mock.addFixture({ match: { userMessage: message, hasToolResult: true }, response: { content: 'Two years, parts and labour.' } });
    const agent = await t.agent(key, {
      model: 'openai/gpt-5-mini',
      tools: [{ type: 'builtin', name: 'knowledge', knowledgeBases: [base.id] }],
    });
    const res = await t.api(key).POST('/api/v1/agents/{id}/execute', { params: { path: { id: agent.id } }, body: { message } });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const run = res.data as { output: string; toolCalls: { name: string }[]; citations: Record<string, unknown>[] };
    expect(run.output).toBe('Two years, parts and labour.');
    expect(run.toolCalls.map((c) => c.name)).toEqual(['knowledge_search']);
    expect(run.citations[0]).toMatchObject({ knowledgeBaseId: base.id, documentId: doc.id, position: 0 });
    // The model was offered the tool with the base named in its description, and got the passage back.
    const asked = mock.getRequests().filter((r) => !r.path.endsWith('/embeddings') && JSON.stringify(r.body ?? '').includes(message));
    expect(JSON.stringify(asked[0].body)).toContain(base.id);
    expect(JSON.stringify(asked.at(-1)!.body)).toContain('The warranty covers parts and labour for two years.');
  });
});
