import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

/**
 * Hostile and broken documents (issue 38): each gets a clear error at upload or a clear `failed`
 * status with a reason, and nothing of it is searchable.
 */

let t: TestApp;
let key: string;
let baseId: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  const { data } = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Bad input' } });
  baseId = data!.id;
});
afterAll(() => t?.close());

const documentsUrl = () => `/api/v1/knowledge-bases/${baseId}/documents`;
const failedWith = async (documentId: string) => {
  let doc: { status: string; failureReason: string | null; chunkCount: number; indexedVersion: number | null } | undefined;
  await vi.waitFor(
    async () => {
      doc = (await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', { params: { path: { id: baseId, documentId } } }))
        .data;
      expect(doc?.status).toBe('failed');
    },
    { timeout: 30_000, interval: 50 },
  );
  expect(doc).toMatchObject({ chunkCount: 0, indexedVersion: null });
  return doc!.failureReason;
};
const upload = async (bytes: Uint8Array, type: string, name: string) => {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), name);
  const res = await t.api(key).POST('/api/v1/files', { body: form as never });
  expect(res.response.status).toBe(201);
  return res.data!.id;
};

describe('a document', () => {
  it('that is not valid UTF-8 fails with that reason', async () => {
    const fileId = await upload(new Uint8Array([0x48, 0x69, 0xff, 0xfe, 0x20, 0xc3, 0x28]), 'text/plain', 'broken.txt');
    const { data } = await t
      .api(key)
      .POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body: { fileId } });
    expect(await failedWith(data!.id)).toMatch(/UTF-8/);
  });

  it('that holds no text fails with that reason', async () => {
    const { data } = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: baseId } },
      body: { content: '   \n\n \t \n' },
    });
    expect(await failedWith(data!.id)).toMatch(/no text/);
  });

  it('of a type no reader knows fails naming the type', async () => {
    const fileId = await upload(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]), 'application/x-made-up', 'blob.bin');
    const { data } = await t
      .api(key)
      .POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body: { fileId } });
    expect(await failedWith(data!.id)).toMatch(/x-made-up|unsupported|cannot be read/i);
  });

  it('over the body limit is a 413, and nothing is recorded', async () => {
    const res = await t.raw('POST', documentsUrl(), { key, body: { content: 'x'.repeat(1024 * 1024 + 1) } });
    expectProblem(res, 413, 'payload_too_large');
    const list = await t
      .api(key)
      .GET('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId }, query: { limit: 100 } } });
    expect(list.data!.documents.every((d) => d.byteSize < 1024 * 1024)).toBe(true);
  });

  it('with bad fields is a 400 naming each', async () => {
    const bad = async (body: Record<string, unknown>, path: string) => {
      const res = await t.raw('POST', documentsUrl(), { key, body: { content: 'x', ...body } });
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    };
    await bad({ tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }, 'body.tags');
    await bad({ tags: ['same', 'same'] }, 'body.tags');
    await bad({ tags: [''] }, 'body.tags.0');
    await bad({ metadata: { nested: { deep: true } } }, 'body.metadata.nested');
    await bad({ metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v'.repeat(900)])) }, 'body.metadata');
    await bad({ sourceUrl: 'not a url' }, 'body.sourceUrl');
    await bad({ mediaType: 'text' }, 'body.mediaType');
    await bad({ title: '' }, 'body.title');
    await bad({ colour: 'red' }, 'body.colour');
  });
});
