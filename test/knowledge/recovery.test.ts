import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

/**
 * Ingestion survives its process (issue 38): a document left `indexing` by a process that died (its
 * lease lapsed, nobody renews it) is claimed again by a live one and indexed; one whose ingestion
 * kept dying fails with a reason instead of being taken forever. The dead process is its row as that
 * process left it, written here directly.
 */

let t: TestApp;
let key: string;
let baseId: string;

beforeAll(async () => {
  // Leases of 2 s: a lapsed one is looked for every 667 ms.
  t = await startApp({ RUN_LEASE_SECONDS: '2' });
  ({ key } = await t.tenant('acme'));
  const { data } = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Recovered' } });
  baseId = data!.id;
});
afterAll(() => t?.close());

const getDocument = (documentId: string) =>
  t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', { params: { path: { id: baseId, documentId } } });
const search = async (query: string) =>
  (await t.api(key).POST('/api/v1/knowledge-bases/{id}/search', { params: { path: { id: baseId } }, body: { query, mode: 'lexical' } }))
    .data!.passages;

/** Adds a document, waits for it to be ready, then leaves its row as a process that died while indexing version 2 would. */
const abandoned = async (content: string, attempts: number) => {
  const { data } = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body: { content } });
  await vi.waitFor(async () => expect((await getDocument(data!.id)).data?.status).toBe('ready'), { timeout: 30_000, interval: 50 });
  const past = new Date(Date.now() - 1000).toISOString();
  await t.db.kysely
    .updateTable('knowledge_documents')
    .set({ status: 'indexing', version: 2, progress: 40, attempts, lease_owner: 'knowledge-dead-process', lease_expires_at: past })
    .where('id', '=', data!.id)
    .execute();
  // Version 2's bytes, as the upload of it wrote them.
  await t.db.kysely.updateTable('knowledge_document_contents').set({ version: 2 }).where('document_id', '=', data!.id).execute();
  return data!.id;
};

describe('ingestion whose process died', () => {
  it('is claimed again once the lease lapsed, and the document indexed', async () => {
    const id = await abandoned('The backup generator is tested monthly.', 1);
    await vi.waitFor(async () => expect((await getDocument(id)).data?.status).toBe('ready'), { timeout: 30_000, interval: 50 });
    expect((await getDocument(id)).data).toMatchObject({ version: 2, indexedVersion: 2, progress: 100 });
    const passages = await search('generator');
    expect(passages.map((p) => p.citation.documentId)).toEqual([id]);
  });

  it('fails with a reason when it kept dying, its indexed version still searchable', async () => {
    const id = await abandoned('The fire drill happens every spring.', 5);
    await vi.waitFor(async () => expect((await getDocument(id)).data?.status).toBe('failed'), { timeout: 30_000, interval: 50 });
    expect((await getDocument(id)).data).toMatchObject({
      version: 2,
      indexedVersion: 1,
      failureReason: 'its ingestion was interrupted 5 times',
    });
    expect((await search('drill')).map((p) => p.citation.documentId)).toEqual([id]);
  });
});
