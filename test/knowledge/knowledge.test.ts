import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

/**
 * Knowledge bases (issue 38): CRUD and its validation, documents ingested in the background to
 * `ready`, and the failure of one that cannot be read, each tenant's own.
 */

let t: TestApp;
let key: string;
let otherKey: string;
let tenantOf: string;

beforeAll(async () => {
  t = await startApp();
  ({ key, id: tenantOf } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
});
afterAll(() => t?.close());

/** The field errors of a 400 problem the typed client answered. */
const fieldErrors = (res: { error?: unknown }) => (res.error as { errors: { path: string; message: string }[] }).errors;
const createBase = async (name: string, k = key) => {
  const { data, error, response } = await t.api(k).POST('/api/v1/knowledge-bases', { body: { name } });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!;
};
const addDocument = async (
  baseId: string,
  body: { content?: string; fileId?: string; mediaType?: string; title?: string; tags?: string[] },
) => {
  const { data, error, response } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body });
  expect(response.status, JSON.stringify(error)).toBe(202);
  return data!;
};
const getDocument = (baseId: string, documentId: string, k = key) =>
  t.api(k).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', { params: { path: { id: baseId, documentId } } });
/** Waits until the document's ingestion has ended (ready or failed) and answers it. */
const settled = async (baseId: string, documentId: string) => {
  let doc: Awaited<ReturnType<typeof getDocument>>['data'];
  await vi.waitFor(
    async () => {
      doc = (await getDocument(baseId, documentId)).data;
      expect(['ready', 'failed']).toContain(doc?.status);
    },
    { timeout: 30_000, interval: 50 },
  );
  return doc!;
};

describe('knowledge bases', () => {
  it('are created, listed, read, changed and deleted', async () => {
    const { data: created, response } = await t.api(key).POST('/api/v1/knowledge-bases', {
      body: { name: 'Handbook', description: 'HR policies', chunking: { maxChars: 800, overlapChars: 100 } },
    });
    expect(response.status).toBe(201);
    expect(created).toMatchObject({
      name: 'Handbook',
      description: 'HR policies',
      embeddingModel: 'builtin/hash-embedding',
      chunking: { maxChars: 800, overlapChars: 100 },
      documentCount: 0,
      chunkCount: 0,
    });
    const list = await t.api(key).GET('/api/v1/knowledge-bases', { params: { query: { limit: 100 } } });
    expect(list.data!.knowledgeBases.map((b) => b.id)).toContain(created!.id);
    expect(list.data).toMatchObject({ page: 1, limit: 100 });
    const patched = await t.api(key).PATCH('/api/v1/knowledge-bases/{id}', {
      params: { path: { id: created!.id } },
      body: { name: 'Handbook 2027', description: null },
    });
    expect(patched.data).toMatchObject({ name: 'Handbook 2027', description: null, chunking: { maxChars: 800 } });
    const got = await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: created!.id } } });
    expect(got.data!.name).toBe('Handbook 2027');
    const deleted = await t.api(key).DELETE('/api/v1/knowledge-bases/{id}', { params: { path: { id: created!.id } } });
    expect(deleted.response.status).toBe(204);
    expectProblem(await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: created!.id } } }), 404, 'not_found');
  });

  it('refuse bad input with 400s naming the field, and a second base of one name with a 409', async () => {
    const noName = await t.raw('POST', '/api/v1/knowledge-bases', { key, body: {} });
    expectProblem(noName, 400, 'validation_failed');
    expect(noName.body.errors).toContainEqual({ path: 'body.name', message: 'is required' });
    const badModel = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'x', embeddingModel: 'nowhere/model' } });
    expectProblem(badModel, 400, 'validation_failed');
    expect(fieldErrors(badModel)[0].path).toBe('body.embeddingModel');
    const overlap = await t
      .api(key)
      .POST('/api/v1/knowledge-bases', { body: { name: 'x', chunking: { maxChars: 400, overlapChars: 300 } } });
    expectProblem(overlap, 400, 'validation_failed');
    expect(fieldErrors(overlap)[0].path).toBe('body.chunking.overlapChars');
    const tooSmall = await t.raw('POST', '/api/v1/knowledge-bases', {
      key,
      body: { name: 'x', chunking: { maxChars: 10, overlapChars: 0 } },
    });
    expectProblem(tooSmall, 400, 'validation_failed');
    expect(tooSmall.body.errors[0].path).toBe('body.chunking.maxChars');
    await createBase('Same');
    expectProblem(await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Same' } }), 409, 'knowledge_base_exists');
    const page = await t.raw('GET', '/api/v1/knowledge-bases?limit=101', { key });
    expectProblem(page, 400, 'validation_failed');
  });

  it('are each tenant’s own: another tenant’s answer 404, and its lists never show them', async () => {
    const base = await createBase('Private');
    const doc = await addDocument(base.id, { content: 'secret plans' });
    expectProblem(await t.api(otherKey).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: base.id } } }), 404, 'not_found');
    expectProblem(await getDocument(base.id, doc.id, otherKey), 404, 'not_found');
    expectProblem(
      await t.api(otherKey).POST('/api/v1/knowledge-bases/{id}/search', { params: { path: { id: base.id } }, body: { query: 'secret' } }),
      404,
      'not_found',
    );
    expectProblem(
      await t
        .api(otherKey)
        .DELETE('/api/v1/knowledge-bases/{id}/documents/{documentId}', { params: { path: { id: base.id, documentId: doc.id } } }),
      404,
      'not_found',
    );
    expectProblem(await t.api(otherKey).DELETE('/api/v1/knowledge-bases/{id}', { params: { path: { id: base.id } } }), 404, 'not_found');
    const theirs = await t.api(otherKey).GET('/api/v1/knowledge-bases', {});
    expect(theirs.data!.knowledgeBases.map((b) => b.id)).not.toContain(base.id);
    // Still there for its own tenant.
    expect((await getDocument(base.id, doc.id)).response.status).toBe(200);
  });

  it('take permissions: reading with agents:read, changing with agents:write', async () => {
    const reader = await t.key(key, ['agents:read']);
    const base = await createBase('Perms');
    expect((await t.api(reader).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: base.id } } })).response.status).toBe(200);
    expectProblem(await t.api(reader).POST('/api/v1/knowledge-bases', { body: { name: 'nope' } }), 403, 'forbidden');
    expectProblem(
      await t.api(reader).POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: base.id } }, body: { content: 'x' } }),
      403,
      'forbidden',
    );
    const skillsOnly = await t.key(key, ['skills:read']);
    expectProblem(await t.api(skillsOnly).GET('/api/v1/knowledge-bases', {}), 403, 'forbidden');
  });
});

describe('documents', () => {
  it('are ingested to ready, their status, progress and counts shown', async () => {
    const base = await createBase('Ingest');
    const doc = await addDocument(base.id, {
      content: 'The office opens at nine.\n\nParking is behind the building.',
      title: 'Office',
      tags: ['facilities'],
    });
    expect(doc).toMatchObject({
      status: 'queued',
      version: 1,
      indexedVersion: null,
      progress: 0,
      mediaType: 'text/plain',
      tags: ['facilities'],
    });
    const ready = await settled(base.id, doc.id);
    expect(ready).toMatchObject({ status: 'ready', version: 1, indexedVersion: 1, progress: 100, failureReason: null, title: 'Office' });
    expect(ready.chunkCount).toBeGreaterThan(0);
    const got = await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: base.id } } });
    expect(got.data).toMatchObject({ documentCount: 1, chunkCount: ready.chunkCount });
    const list = await t
      .api(key)
      .GET('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: base.id }, query: { status: 'ready' } } });
    expect(list.data).toMatchObject({ total: 1, documents: [{ id: doc.id }] });
  });

  it('come from the files API by fileId', async () => {
    const base = await createBase('Files');
    const form = new FormData();
    form.append('file', new Blob(['Invoices are paid within thirty days.'], { type: 'text/plain' }), 'terms.txt');
    const uploaded = await t.api(key).POST('/api/v1/files', { body: form as never });
    expect(uploaded.response.status).toBe(201);
    const doc = await addDocument(base.id, { fileId: uploaded.data!.id });
    expect(doc).toMatchObject({ fileId: uploaded.data!.id, filename: 'terms.txt', mediaType: 'text/plain' });
    expect((await settled(base.id, doc.id)).status).toBe('ready');
    const missing = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: base.id } },
      body: { fileId: '0193a0a0-0000-7000-8000-000000000000' },
    });
    expectProblem(missing, 400, 'validation_failed');
    expect(fieldErrors(missing)).toEqual([{ path: 'body.fileId', message: 'names no file of this tenant' }]);
  });

  it('need exactly one of fileId and content', async () => {
    const base = await createBase('Either');
    const neither = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: base.id } }, body: {} });
    expectProblem(neither, 400, 'validation_failed');
    expect(fieldErrors(neither)[0].path).toBe('body.content');
    const both = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: base.id } },
      body: { content: 'x', fileId: 'y' },
    });
    expectProblem(both, 400, 'validation_failed');
    expect(fieldErrors(both)[0].path).toBe('body.fileId');
  });

  it('that cannot be read fail with a reason, and nothing of them is searchable', async () => {
    const base = await createBase('Failing');
    const doc = await addDocument(base.id, { content: '%PDF-1.4 not really', mediaType: 'application/x-unknown' });
    const failed = await settled(base.id, doc.id);
    expect(failed.status).toBe('failed');
    expect(failed.failureReason).toMatch(/x-unknown|unsupported|cannot be read/i);
    expect(failed).toMatchObject({ indexedVersion: null, chunkCount: 0 });
    const found = await t.api(key).POST('/api/v1/knowledge-bases/{id}/search', {
      params: { path: { id: base.id } },
      body: { query: 'really', mode: 'lexical' },
    });
    expect(found.data!.passages).toEqual([]);
  });

  it('deleted leave search at once', async () => {
    const base = await createBase('Deleting');
    const doc = await addDocument(base.id, { content: 'Quarterly revenue grew by twelve percent.' });
    await settled(base.id, doc.id);
    const search = () =>
      t.api(key).POST('/api/v1/knowledge-bases/{id}/search', { params: { path: { id: base.id } }, body: { query: 'revenue' } });
    expect((await search()).data!.passages).toHaveLength(1);
    const deleted = await t.api(key).DELETE('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: base.id, documentId: doc.id } },
    });
    expect(deleted.response.status).toBe(204);
    expect((await search()).data!.passages).toEqual([]);
    expect((await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: base.id } } })).data).toMatchObject({
      documentCount: 0,
      chunkCount: 0,
    });
    expectProblem(await getDocument(base.id, doc.id), 404, 'not_found');
  });

  it('are chunked again when the base’s chunking changes', async () => {
    const { data: base } = await t.api(key).POST('/api/v1/knowledge-bases', {
      body: { name: 'Rechunked', chunking: { maxChars: 8000, overlapChars: 0 } },
    });
    const paragraphs = Array.from({ length: 20 }, (_, i) => `Paragraph ${i}: ${'words of some length '.repeat(8)}`.trim());
    const doc = await addDocument(base!.id, { content: paragraphs.join('\n\n') });
    expect((await settled(base!.id, doc.id)).chunkCount).toBe(1);
    const patched = await t.api(key).PATCH('/api/v1/knowledge-bases/{id}', {
      params: { path: { id: base!.id } },
      body: { chunking: { maxChars: 400, overlapChars: 0 } },
    });
    expect(patched.data!.chunking).toEqual({ maxChars: 400, overlapChars: 0 });
    await vi.waitFor(async () => expect((await getDocument(base!.id, doc.id)).data!.chunkCount).toBeGreaterThan(1), {
      timeout: 30_000,
      interval: 50,
    });
    const ready = (await getDocument(base!.id, doc.id)).data!;
    expect(ready).toMatchObject({ status: 'ready', version: 1, indexedVersion: 1 });
    const got = await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: base!.id } } });
    expect(got.data!.chunkCount).toBe(ready.chunkCount);
  });
});

describe('limits', () => {
  it('a tenant holds at most 100 knowledge bases: the 101st is a 409', async () => {
    const { key: own } = await t.tenant('many');
    for (let i = 0; i < 100; i++) {
      const { response } = await t.api(own).POST('/api/v1/knowledge-bases', { body: { name: `base ${i}` } });
      expect(response.status).toBe(201);
    }
    expectProblem(await t.api(own).POST('/api/v1/knowledge-bases', { body: { name: 'one too many' } }), 409, 'knowledge_base_limit');
    const list = await t.api(own).GET('/api/v1/knowledge-bases', { params: { query: { limit: 1 } } });
    expect(list.data!.total).toBe(100);
  });

  it('a base holds at most 10,000 documents: the 10,001st is a 409', async () => {
    const base = await createBase('Full');
    // 9,999 documents written straight to the table (ingesting them would only slow the test), then the API's.
    const at = new Date().toISOString();
    const row = (i: number) => ({
      id: `01900000-0000-7000-8000-${String(i).padStart(12, '0')}`,
      tenant_id: tenantOf,
      knowledge_base_id: base.id,
      file_id: null,
      filename: null,
      title: null,
      source_url: null,
      tags: '[]',
      metadata: '{}',
      media_type: 'text/plain',
      byte_size: 1,
      version: 1,
      indexed_version: null,
      status: 'failed',
      failure_reason: 'written by the test',
      progress: 0,
      chunk_count: 0,
      attempts: 1,
      available_at: at,
      lease_owner: null,
      lease_expires_at: null,
      created_at: at,
      updated_at: at,
      indexed_at: null,
    });
    for (let i = 0; i < 9_999; i += 500) {
      await t.db.kysely
        .insertInto('knowledge_documents')
        .values(Array.from({ length: Math.min(500, 9_999 - i) }, (_, j) => row(i + j)))
        .execute();
    }
    expect((await addDocument(base.id, { content: 'the last one that fits' })).status).toBe('queued');
    const refused = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: base.id } },
      body: { content: 'one too many' },
    });
    expectProblem(refused, 409, 'knowledge_document_limit');
  });
});
