import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';

/**
 * Migration 0027 gives chunks stored before it their embedding's sketches (int8 on SQLite; int8 offset
 * by 128 and level bits on PostgreSQL), the same ingestion writes now, so vector search's first pass finds them.
 */

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant());
});
afterAll(() => t?.close());

const sketchColumns = dialect === 'postgres' ? (['embedding_levels', 'embedding_uint8'] as const) : (['embedding_int8'] as const);

async function sketches() {
  const rows = await t.db.kysely
    .selectFrom('knowledge_chunks')
    .select(['seq', ...sketchColumns])
    .orderBy('seq')
    .execute();
  return rows.flatMap((r) =>
    sketchColumns.map((column) => ({ seq: Number(r.seq), column, sketch: (r as Record<string, unknown>)[column] })),
  );
}

describe('migration 0027: vector sketches', () => {
  it('writes every existing chunk the sketch ingestion writes, and search finds the same passages', async () => {
    const { data: base } = await t
      .api(key)
      .POST('/api/v1/knowledge-bases', { body: { name: 'Before', chunking: { maxChars: 200, overlapChars: 0 } } });
    const paragraphs = Array.from({ length: 40 }, (_, i) => `Paragraph ${i} tells of harbour number ${i * 7}, its cranes and its tides.`);
    const added = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: base!.id } },
      body: { content: paragraphs.join('\n\n'), mediaType: 'text/plain' },
    });
    expect(added.response.status).toBe(202);
    await vi.waitFor(
      async () => {
        const doc = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
          params: { path: { id: base!.id, documentId: added.data!.id } },
        });
        expect(doc.data!.status).toBe('ready');
      },
      { timeout: 30_000, interval: 50 },
    );
    const search = async () =>
      (
        await t.api(key).POST('/api/v1/knowledge-bases/{id}/search', {
          params: { path: { id: base!.id } },
          body: { query: 'cranes of harbour 63', mode: 'vector', k: 5 },
        })
      ).data!;
    const written = await sketches();
    expect(written.length).toBeGreaterThan(10);
    expect(written.every((r) => r.sketch !== null && r.sketch !== undefined)).toBe(true);
    const found = await search();

    const migration = (await migrationProvider().getMigrations())['0027_knowledge_vector_sketch'];
    const db = t.db.kysely as unknown as Kysely<unknown>;
    await migration.down!(db);
    await migration.up(db);

    expect(await sketches()).toEqual(written);
    const again = await search();
    expect(again.passages.map((p) => [p.citation.position, p.citation.score])).toEqual(
      found.passages.map((p) => [p.citation.position, p.citation.score]),
    );
    expect(again.vectorIndex).toBe(dialect === 'postgres' ? 'int8' : 'sqlite-vec');
  });
});
