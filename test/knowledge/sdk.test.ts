import { Agentry, AgentryError } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

/** Knowledge through the SDK (issue 38): `client.knowledge` and its documents, over a real socket. */

let t: TestApp;
let client: Agentry;

beforeAll(async () => {
  t = await startApp();
  const { key } = await t.tenant();
  client = new Agentry({ baseUrl: await t.listen(), apiKey: key });
});
afterAll(() => t?.close());

describe('client.knowledge', () => {
  it('creates a base, adds, replaces and deletes documents, and searches', async () => {
    const base = await client.knowledge.create({ name: 'SDK', description: 'through the SDK' });
    expect(base).toMatchObject({ name: 'SDK', embeddingModel: 'builtin/hash-embedding', documentCount: 0 });
    const doc = await client.knowledge.documents.add(base.id, {
      content: 'Deliveries arrive on Tuesdays.',
      title: 'Deliveries',
      tags: ['ops'],
    });
    expect(doc).toMatchObject({ status: 'queued', version: 1 });
    await vi.waitFor(async () => expect((await client.knowledge.documents.get(base.id, doc.id)).status).toBe('ready'), {
      timeout: 30_000,
      interval: 50,
    });
    const found = await client.knowledge.search(base.id, { query: 'when do deliveries arrive', k: 3 });
    expect(found.passages[0].citation).toMatchObject({ documentId: doc.id, title: 'Deliveries' });

    const replaced = await client.knowledge.documents.replace(base.id, doc.id, { content: 'Deliveries arrive on Fridays.' });
    expect(replaced.version).toBe(2);
    await vi.waitFor(async () => expect((await client.knowledge.documents.get(base.id, doc.id)).indexedVersion).toBe(2), {
      timeout: 30_000,
      interval: 50,
    });
    expect((await client.knowledge.search(base.id, { query: 'deliveries', mode: 'lexical' })).passages[0].text).toBe(
      'Deliveries arrive on Fridays.',
    );

    expect((await client.knowledge.documents.list(base.id, { status: 'ready' }).toArray()).map((d) => d.id)).toEqual([doc.id]);

    const uploaded = await client.knowledge.documents.upload(
      base.id,
      new Blob(['Returns are accepted within 30 days.'], { type: 'text/plain' }),
      {
        name: 'returns.txt',
      },
    );
    expect(uploaded).toMatchObject({ status: 'queued', filename: 'returns.txt', mediaType: 'text/plain', fileId: null });
    await vi.waitFor(async () => expect((await client.knowledge.documents.get(base.id, uploaded.id)).status).toBe('ready'), {
      timeout: 30_000,
      interval: 50,
    });
    expect((await client.knowledge.search(base.id, { query: 'returns accepted', k: 1 })).passages[0].citation.documentId).toBe(uploaded.id);
    const tooLarge = await client.knowledge.documents
      .upload(base.id, new Blob([new Uint8Array(5 * 1024 * 1024 + 1)], { type: 'text/plain' }), { name: 'huge.txt' })
      .catch((err: unknown) => err);
    expect(tooLarge).toMatchObject({ status: 413, code: 'payload_too_large' });
    await client.knowledge.documents.delete(base.id, uploaded.id);
    expect((await client.knowledge.list().toArray()).map((b) => b.id)).toContain(base.id);
    expect(await client.knowledge.update(base.id, { name: 'SDK 2' })).toMatchObject({ name: 'SDK 2' });
    await client.knowledge.documents.delete(base.id, doc.id);
    expect((await client.knowledge.get(base.id)).documentCount).toBe(0);
    await client.knowledge.delete(base.id);
    const gone = await client.knowledge.get(base.id).catch((err: unknown) => err);
    expect(gone).toBeInstanceOf(AgentryError);
    expect(gone).toMatchObject({ status: 404, code: 'not_found' });
  });
});
