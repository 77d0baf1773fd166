import { Agentry, AgentryError } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

/**
 * One chunk of a document by its position (GET .../documents/:documentId/chunks/:position): what a
 * citation points at, so a person can read the passage an answer drew on. The tenant's own, of the
 * version search sees, a 404 problem for anything else.
 */

let t: TestApp;
let key: string;
let otherKey: string;
let baseId: string;
let documentId: string;

const chunkOf = (base: string, document: string, position: number | string, k = key) =>
  t.raw('GET', `/api/v1/knowledge-bases/${base}/documents/${document}/chunks/${position}`, { key: k });

const waitForStatus = async (base: string, document: string, statuses: string[]) => {
  await vi.waitFor(
    async () => {
      const doc = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
        params: { path: { id: base, documentId: document } },
      });
      expect(statuses).toContain(doc.data?.status);
    },
    { timeout: 30_000, interval: 50 },
  );
};

// Three sections of about 300 characters each, cut at 200-character chunks: several chunks under headings.
const handbook = [
  '# Handbook',
  '## Leave',
  `Parental leave lasts sixteen weeks at full pay. ${'Leave is planned with the team lead. '.repeat(6)}`,
  '## Expenses',
  `Receipts are filed within thirty days of the purchase. ${'Expenses are paid with the next salary. '.repeat(6)}`,
].join('\n\n');

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
  const base = await t
    .api(key)
    .POST('/api/v1/knowledge-bases', { body: { name: 'Handbook', chunking: { maxChars: 200, overlapChars: 0 } } });
  baseId = base.data!.id;
  const doc = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
    params: { path: { id: baseId } },
    body: { content: handbook, mediaType: 'text/markdown', title: 'Staff handbook' },
  });
  documentId = doc.data!.id;
  await waitForStatus(baseId, documentId, ['ready']);
});
afterAll(() => t?.close());

describe('a document’s chunk by position', () => {
  it('answers the chunk a search cited: its text, headings, version and the document’s chunk count', async () => {
    const search = await t.api(key).POST('/api/v1/knowledge-bases/{id}/search', {
      params: { path: { id: baseId } },
      body: { query: 'receipts filed thirty days', mode: 'lexical', k: 1 },
    });
    const [passage] = search.data!.passages;
    expect(passage.citation.position).toBeGreaterThan(0);
    const res = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}/chunks/{position}', {
      params: { path: { id: baseId, documentId, position: passage.citation.position } },
    });
    expect(res.response.status).toBe(200);
    const doc = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: baseId, documentId } },
    });
    expect(res.data).toEqual({
      knowledgeBaseId: baseId,
      documentId,
      title: 'Staff handbook',
      sourceUrl: null,
      version: 1,
      position: passage.citation.position,
      chunkCount: doc.data!.chunkCount,
      headingPath: passage.citation.headingPath,
      text: passage.text,
    });
    expect(res.data!.headingPath).toEqual(['Handbook', 'Expenses']);
    expect(res.data!.text).toContain('Receipts are filed within thirty days');
    // Position 0 is the document's first chunk: its opening headings.
    const first = await chunkOf(baseId, documentId, 0);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ position: 0, text: expect.stringMatching(/^Handbook\b/) });
  });

  it('the SDK reads it: client.knowledge.documents.chunk, a 404 as an AgentryError', async () => {
    const client = new Agentry({ baseUrl: await t.listen(), apiKey: key });
    const chunk = await client.knowledge.documents.chunk(baseId, documentId, 0);
    expect(chunk).toMatchObject({ documentId, position: 0, title: 'Staff handbook' });
    const missing = await client.knowledge.documents.chunk(baseId, documentId, 4000).catch((err) => err);
    expect(missing).toBeInstanceOf(AgentryError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('a position past the chunks, an unknown document or base: 404 problems saying which', async () => {
    const doc = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: baseId, documentId } },
    });
    const count = doc.data!.chunkCount;
    const past = await chunkOf(baseId, documentId, count);
    expectProblem(past, 404, 'not_found');
    expect(past.body.detail).toBe(`knowledge chunk not found: the document has ${count} chunks (positions 0 to ${count - 1})`);
    const unknownDocument = await chunkOf(baseId, '01a00000-0000-7000-8000-000000000000', 0);
    expectProblem(unknownDocument, 404, 'not_found');
    expect(unknownDocument.body.detail).toBe('knowledge document not found');
    expectProblem(await chunkOf('01a00000-0000-7000-8000-000000000000', documentId, 0), 404, 'not_found');
  });

  it('a position that is not a whole number from 0 is a 400 naming it', async () => {
    for (const position of ['-1', 'first', '1.5', '5000']) {
      const res = await chunkOf(baseId, documentId, position);
      expectProblem(res, 400, 'validation_failed');
      expect(JSON.stringify(res.body.errors), position).toContain('position');
    }
  });

  it('a document not indexed yet (failed) has no chunk: 404 saying so', async () => {
    const doc = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: baseId } },
      body: { content: ' \n\n ', title: 'Blank' },
    });
    await waitForStatus(baseId, doc.data!.id, ['failed']);
    const res = await chunkOf(baseId, doc.data!.id, 0);
    expectProblem(res, 404, 'not_found');
    expect(res.body.detail).toBe('knowledge chunk not found: the document has no indexed version yet');
  });

  it('another tenant’s chunk is a 404; reading takes agents:read', async () => {
    expectProblem(await chunkOf(baseId, documentId, 0, otherKey), 404, 'not_found');
    const writer = await t.key(key, ['agents:write']);
    expectProblem(await chunkOf(baseId, documentId, 0, writer), 403, 'forbidden');
    const reader = await t.key(key, ['agents:read']);
    expect((await chunkOf(baseId, documentId, 0, reader)).status).toBe(200);
  });
});
