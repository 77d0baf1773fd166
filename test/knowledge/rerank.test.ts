import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerEnv, requestsWith, startAimock } from '../helpers/aimock.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { documentsReady } from '../helpers/knowledge.js';

/**
 * Re-ranking (issue 38): a knowledge base's `rerankModel`, a chat model behind the provider layer
 * (aimock here, as OpenAI-compatible), orders the fused ranking's best candidates. A model that fails,
 * or answers no ranking, leaves the fused order, and the answer says so; nothing looks re-ranked that was not.
 */

const MODEL = 'openai-compatible/ranker';
let mock: LLMock;
let t: TestApp;
let key: string;
let baseId: string;

const search = async (body: Record<string, unknown>) => {
  const { data, error, response } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases/{id}/search', { params: { path: { id: baseId } }, body: body as { query: string } });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!;
};
const titles = (result: { passages: { citation: { title: string | null } }[] }) => result.passages.map((p) => p.citation.title);

beforeAll(async () => {
  mock = await startAimock();
  t = await startApp(providerEnv(mock));
  ({ key } = await t.tenant('acme'));
  const created = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Garden', rerankModel: MODEL } });
  expect(created.response.status, JSON.stringify(created.error)).toBe(201);
  expect(created.data!.rerankModel).toBe(MODEL);
  baseId = created.data!.id;
  const documents = {
    Roses: 'Roses are pruned in early spring, just above an outward-facing bud.',
    Tomatoes: 'Tomatoes are pruned by pinching out the side shoots every week.',
    Hedges: 'Hedges are pruned twice a year, in late spring and late summer.',
  };
  for (const [title, content] of Object.entries(documents)) {
    const added = await t
      .api(key)
      .POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body: { title, content } });
    expect(added.response.status).toBe(202);
  }
  await documentsReady(t.api(key), baseId, 3);
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});

describe('re-ranking by a model', () => {
  it('orders the candidates as the model answers, and says it did', async () => {
    const fused = await search({ query: 'when are roses pruned', rerank: false, k: 3 });
    expect(fused.rerank).toBeNull();
    expect(fused.passages).toHaveLength(3);
    // The model is shown the fused order, numbered from 1: it puts the last first and leaves one out.
    mock.addFixture({ match: { userMessage: 'Query: when are roses pruned' }, response: { content: '{"ranking": [3, 1]}' } });
    const reranked = await search({ query: 'when are roses pruned', k: 3 });
    expect(reranked.rerank).toEqual({ model: MODEL, status: 'reranked', candidates: 3, error: null });
    const [first, second, third] = titles(fused);
    // The one left out comes after those the model ranked; scores follow the new order.
    expect(titles(reranked)).toEqual([third, first, second]);
    expect(reranked.passages.map((p) => p.citation.score)).toEqual([1, 2 / 3, 1 / 3]);
    const asked = requestsWith(mock, 'Query: when are roses pruned');
    expect(asked).toHaveLength(1);
    expect(JSON.stringify(asked[0].body)).toContain('[3] ');
  });

  it('keeps the fused order when the model fails or answers no ranking, and says why', async () => {
    const fused = titles(await search({ query: 'how are hedges pruned', rerank: false, k: 3 }));
    mock.addFixture({ match: { userMessage: 'Query: how are hedges pruned' }, response: { content: 'The hedges one, I think.' } });
    const prose = await search({ query: 'how are hedges pruned', k: 3 });
    expect(prose.rerank).toMatchObject({ model: MODEL, status: 'failed', error: 'the re-ranking model did not answer a ranking' });
    expect(titles(prose)).toEqual(fused);

    mock.addFixture({ match: { userMessage: 'Query: tomato shoots' }, response: { content: '{"ranking": [7]}' } });
    const outOfRange = await search({ query: 'tomato shoots', k: 3 });
    expect(outOfRange.rerank).toMatchObject({ status: 'failed', error: "the re-ranking model answered 7, not a passage's number" });

    mock.addFixture({
      match: { userMessage: 'Query: pruning in summer' },
      response: { error: { message: 'overloaded', type: 'server_error' }, status: 500 },
    });
    const down = await search({ query: 'pruning in summer', k: 3 });
    expect(down.rerank).toMatchObject({ model: MODEL, status: 'failed' });
    expect(down.rerank!.error).toMatch(/^the re-ranking model could not be asked/);
    expect(down.passages).toHaveLength(3);
  });

  it('is refused where it cannot work: a model the server cannot call, the echo model, rerank without a model', async () => {
    const bad = async (body: unknown, path: string) => {
      const res = await t.raw('POST', '/api/v1/knowledge-bases', { key, body });
      expectProblem(res, 400, 'validation_failed');
      expect(res.text).toContain(path);
    };
    await bad({ name: 'A', rerankModel: 'nowhere/model' }, 'body.rerankModel');
    await bad({ name: 'B', rerankModel: 'builtin/echo' }, 'body.rerankModel');
    const plain = (await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Plain' } })).data!;
    expect(plain.rerankModel).toBeNull();
    const res = await t.raw('POST', `/api/v1/knowledge-bases/${plain.id}/search`, { key, body: { query: 'roses', rerank: true } });
    expectProblem(res, 400, 'validation_failed');
    expect(res.text).toContain('body.rerank');
    // Switched off again by an update: searches are no longer re-ranked.
    const off = await t.api(key).PATCH('/api/v1/knowledge-bases/{id}', { params: { path: { id: baseId } }, body: { rerankModel: null } });
    expect(off.data!.rerankModel).toBeNull();
    expect((await search({ query: 'when are roses pruned' })).rerank).toBeNull();
  });
});
