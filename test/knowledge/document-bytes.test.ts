import Database from 'better-sqlite3';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { documentsReady } from '../helpers/knowledge.js';

/**
 * A document's bytes are written once, when it is uploaded: the states its ingestion moves it through
 * (claimed, progress, failed or ready, leases) write its row, not its bytes again. On SQLite a row's
 * record is rewritten whole when its size changes, so bytes kept in the document's row were written
 * again by each such update (a 5 MiB document: 20 MiB more per ingestion, and a disk with room for the
 * document ran out before the ingestion could record that it failed). PostgreSQL keeps large values
 * out of line (TOAST), so this reads SQLite's WAL.
 */

const PAGE = 4096;
let t: TestApp;
let key: string;
let baseId: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  const { data } = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Bytes' } });
  baseId = data!.id;
});
afterAll(() => t?.close());

/** Frames in the WAL since it was last rewound. */
const walFrames = async () => (await sql<{ log: number }>`pragma wal_checkpoint(passive)`.execute(t.db.kysely)).rows[0].log;

describe.skipIf(dialect !== 'sqlite')('a document’s bytes', () => {
  it('are written once: its ingestion’s updates (claimed, progress, failed) write its row, not its bytes', async () => {
    // A reader holding a snapshot keeps the WAL from being rewound: every page written from here on stays in it.
    const reader = new Database(t.db.location, { readonly: true });
    try {
      reader.prepare('begin').run();
      reader.prepare('select count(*) from knowledge_documents').get();
      const before = await walFrames();

      // 900 KiB (the JSON body's limit is 1 MiB) with no word in it: claimed, then failed for holding no text.
      const content = ' '.repeat(900 * 1024);
      const added = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
        params: { path: { id: baseId } },
        body: { title: 'Blank', content },
      });
      expect(added.response.status, JSON.stringify(added.error)).toBe(202);
      await vi.waitFor(
        async () => {
          const { data } = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
            params: { path: { id: baseId, documentId: added.data!.id } },
          });
          expect(data).toMatchObject({ status: 'failed', failureReason: 'the document holds no text' });
        },
        { timeout: 30_000, interval: 50 },
      );

      const written = ((await walFrames()) - before) * PAGE;
      // The upload wrote the bytes once; the claim and the failure wrote little more.
      expect(written).toBeGreaterThan(content.length);
      expect(written).toBeLessThan(content.length * 1.25);
    } finally {
      reader.prepare('rollback').run();
      reader.close();
    }
  });
});

describe('migration 0031', () => {
  it('moves each document’s bytes out of its row into knowledge_document_contents, and back on the way down', async () => {
    const { data: base } = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Harbour' } });
    const text = 'Tide tables for the harbour are posted at the pier office.';
    const { data: added } = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: base!.id } },
      body: { title: 'Tides', content: text },
    });
    await documentsReady(t.api(key), base!.id, 1);
    const migration = (await migrationProvider().getMigrations())['0031_knowledge_document_contents'];
    const db = t.db.kysely as unknown as Kysely<unknown>;

    await migration.down!(db);
    const inRow = await sql<{ content: Buffer }>`select content from knowledge_documents where id = ${added!.id}`.execute(db);
    expect(Buffer.from(inRow.rows[0].content).toString()).toBe(text);

    await migration.up(db);
    const apart = await sql<{ version: number; content: Buffer }>`select version, content from knowledge_document_contents
      where document_id = ${added!.id}`.execute(db);
    expect(apart.rows.map((r) => ({ version: r.version, content: Buffer.from(r.content).toString() }))).toEqual([
      { version: 1, content: text },
    ]);
    const [row] = (await sql<Record<string, unknown>>`select * from knowledge_documents where id = ${added!.id}`.execute(db)).rows;
    expect(row).not.toHaveProperty('content');

    // Indexed again from the bytes where they now are, and replaced by a new version.
    const reindexed = await t.api(key).PATCH('/api/v1/knowledge-bases/{id}', {
      params: { path: { id: base!.id } },
      body: { chunking: { maxChars: 300, overlapChars: 0 } },
    });
    expect(reindexed.response.status, JSON.stringify(reindexed.error)).toBe(200);
    await documentsReady(t.api(key), base!.id, 1);
    const replaced = await t.api(key).PUT('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: base!.id, documentId: added!.id } },
      body: { title: 'Tides', content: 'Ferry timetables hang beside the tide tables.' },
    });
    expect(replaced.response.status).toBe(202);
    await vi.waitFor(
      async () => {
        const { data } = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
          params: { path: { id: base!.id, documentId: added!.id } },
        });
        expect(data).toMatchObject({ status: 'ready', version: 2, indexedVersion: 2 });
      },
      { timeout: 30_000, interval: 50 },
    );
    const { data: found } = await t.api(key).POST('/api/v1/knowledge-bases/{id}/search', {
      params: { path: { id: base!.id } },
      body: { query: 'ferry timetables', mode: 'lexical' },
    });
    expect(found!.passages.map((p) => p.text)).toEqual(['Ferry timetables hang beside the tide tables.']);
  });
});
