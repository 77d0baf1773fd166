import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { checkpointWholeWal } from '../helpers/sqlite-file.js';

/**
 * A full disk during ingestion (issue 38), for real: a tmpfs of its own, filled by a file but for a
 * few megabytes, holds on SQLite the database itself (DATA_DIR) and on PostgreSQL a tablespace that
 * knowledge_chunks is moved to. A document whose chunks need more than is left ends `failed` with a
 * reason saying so, nothing of it searchable; the server keeps answering; once the file is removed,
 * uploading the document again indexes it. Mounting needs root (as the machines and CI run).
 */

const STORAGE_FAULT =
  'the database could not write the document’s chunks (disk full, failing or read-only storage): nothing of it was indexed; upload it again once space is freed';
/** What the filler leaves free: room for the document's row (its 400 KB), not for its chunks (several MB). */
const LEFT_FREE = 1.5 * 1024 * 1024;

const mountPoint = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-full-disk-'));
const tablespace = `agentry_full_disk_${process.pid}`;
const filler = path.join(mountPoint, 'filler');
let t: TestApp;
let key: string;
let baseId: string;
let admin: pg.Client | undefined;

/** Words that occur once each in the corpus: each chunk indexes words of its own. */
const content = Array.from({ length: 8000 }, (_, i) => `Clause ${i} binds zq${i.toString(36)}x to ledger ${i * 7}.`).join('\n\n');

const fill = async () => {
  // On SQLite, what the WAL holds is first copied into the database file and the WAL emptied: copied
  // later by the checkpointer (a loaded machine delays it), it would take the space left for the test.
  if (dialect === 'sqlite') await checkpointWholeWal(t.db.kysely);
  const { bavail, bsize } = fs.statfsSync(mountPoint);
  const size = Math.max(0, Number(bavail) * Number(bsize) - LEFT_FREE);
  const fd = fs.openSync(filler, 'w');
  const block = Buffer.alloc(1024 * 1024, 1);
  for (let written = 0; written < size; written += block.length) fs.writeSync(fd, block, 0, Math.min(block.length, size - written));
  fs.closeSync(fd);
};

beforeAll(async () => {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', mountPoint]);
  if (dialect === 'sqlite') {
    t = await startApp({ DATA_DIR: mountPoint });
  } else {
    execFileSync('chown', ['postgres:postgres', mountPoint]);
    admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE TABLESPACE ${tablespace} LOCATION '${mountPoint}'`);
    t = await startApp();
    await sql.raw(`ALTER TABLE knowledge_chunks SET TABLESPACE ${tablespace}`).execute(t.db.kysely);
  }
  ({ key } = await t.tenant('acme'));
  const { data } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases', { body: { name: 'Contracts', chunking: { maxChars: 200, overlapChars: 0 } } });
  baseId = data!.id;
});
afterAll(async () => {
  await t?.close();
  if (admin) {
    await admin.query(`DROP TABLESPACE IF EXISTS ${tablespace}`);
    await admin.end();
  }
  execFileSync('umount', [mountPoint]);
  fs.rmdirSync(mountPoint);
});

const getDocument = async (documentId: string) =>
  (await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', { params: { path: { id: baseId, documentId } } })).data!;
const settled = async (documentId: string) => {
  await vi.waitFor(
    async () => {
      const document = await getDocument(documentId);
      expect(['ready', 'failed'], JSON.stringify(document)).toContain(document.status);
    },
    {
      timeout: 60_000,
      interval: 100,
    },
  );
  return getDocument(documentId);
};
const search = async (query: string) => {
  const { data, response } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases/{id}/search', { params: { path: { id: baseId } }, body: { query, mode: 'lexical' } });
  expect(response.status).toBe(200);
  return data!.passages;
};

describe('a full disk during ingestion', () => {
  it('fails the document with a reason, leaves nothing of it searchable, keeps answering, and indexes it once space is back', async () => {
    await fill();
    const added = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: baseId } },
      body: { title: 'Master agreement', content },
    });
    expect(added.response.status, JSON.stringify(added.error)).toBe(202);
    const documentId = added.data!.id;

    const failed = await settled(documentId);
    expect(failed).toMatchObject({ status: 'failed', failureReason: STORAGE_FAULT, indexedVersion: null, chunkCount: 0 });
    // Nothing half-indexed: no chunk of it is searchable or readable, and the base counts none.
    expect(await search(`zq${(700).toString(36)}x`)).toEqual([]);
    const chunk = await t.raw('GET', `/api/v1/knowledge-bases/${baseId}/documents/${documentId}/chunks/0`, { key });
    expect(chunk.status).toBe(404);
    expect((await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: baseId } } })).data!.chunkCount).toBe(0);
    // The server answers.
    expect((await t.api().GET('/healthz')).response.status).toBe(200);
    expect((await t.api(key).GET('/api/v1/knowledge-bases')).response.status).toBe(200);

    // Space is back; the failed document is not taken again by itself, it is uploaded again.
    fs.rmSync(filler);
    expect((await getDocument(documentId)).status).toBe('failed');
    const again = await t.api(key).PUT('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: baseId, documentId } },
      body: { title: 'Master agreement', content },
    });
    expect(again.response.status, JSON.stringify(again.error)).toBe(202);
    const ready = await settled(documentId);
    expect(ready).toMatchObject({ status: 'ready', version: 2, indexedVersion: 2, failureReason: null });
    expect(ready.chunkCount).toBeGreaterThan(1000);
    const found = await search(`zq${(700).toString(36)}x`);
    expect(found.map((p) => p.citation.documentId)).toEqual([documentId]);
    expect(found[0].text).toContain('Clause 700 ');
  });
});
