import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { apiOf, startReplicas } from '../helpers/app.js';

/**
 * Ingestion across replicas (issue 38): two app instances on one database, each with its own
 * ingestion workers, take documents uploaded through either; each document is claimed once (on
 * PostgreSQL the claim skips rows another replica locked) and its chunks counted once.
 */

let replicas: Awaited<ReturnType<typeof startReplicas>>;

beforeAll(async () => {
  replicas = await startReplicas(2);
});
afterAll(() => replicas?.close());

describe('two replicas', () => {
  it('ingest every document once, whichever replica it was uploaded to', async () => {
    const [a, b] = replicas.replicas;
    const { apiKey } = await a.services.tenancy.createTenant('acme');
    const apis = [apiOf(a.app, apiKey), apiOf(b.app, apiKey)];
    const { data: base } = await apis[0].POST('/api/v1/knowledge-bases', { body: { name: 'Shared' } });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const { data, response } = await apis[i % 2].POST('/api/v1/knowledge-bases/{id}/documents', {
        params: { path: { id: base!.id } },
        body: { content: `Document ${i} about topic-${i}.\n\nA second paragraph of document ${i}.` },
      });
      expect(response.status).toBe(202);
      ids.push(data!.id);
    }
    await vi.waitFor(
      async () => {
        const ready = await apis[1].GET('/api/v1/knowledge-bases/{id}/documents', {
          params: { path: { id: base!.id }, query: { status: 'ready', limit: 100 } },
        });
        expect(ready.data!.total).toBe(30);
      },
      { timeout: 60_000, interval: 100 },
    );
    const rows = await a.db.kysely
      .selectFrom('knowledge_documents')
      .select(['id', 'attempts', 'chunk_count'])
      .where('id', 'in', ids)
      .execute();
    expect(rows.map((r) => r.attempts)).toEqual(rows.map(() => 1));
    const chunks = rows.reduce((sum, r) => sum + r.chunk_count, 0);
    const got = await apis[0].GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: base!.id } } });
    expect(got.data).toMatchObject({ documentCount: 30, chunkCount: chunks });
    const found = await apis[0].POST('/api/v1/knowledge-bases/{id}/search', {
      params: { path: { id: base!.id } },
      body: { query: 'topic-17', mode: 'lexical' },
    });
    expect(found.data!.passages[0].citation.documentId).toBe(ids[17]);
  });
});
