import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { documentsReady } from '../helpers/knowledge.js';

/**
 * Knowledge's writers take rows in one order: a document's row, then the base's term counts, then the
 * base's row (ingestion's commit, uploads, deletes). A base update that queues its documents again
 * (a new chunking or embedding model) must take them in the same order, or it and an ingestion's
 * commit each hold what the other waits for, and PostgreSQL aborts one of them as a deadlock. Here a
 * transaction of the test's own plays the ingestion: it holds a document's row while the update waits,
 * then writes the base's row. SQLite has one writer at a time, so the order cannot cross there.
 */

let t: TestApp;
let key: string;
let ingestion: pg.Client;
const logLines: Record<string, unknown>[] = [];

/** A base holding one document, indexed. */
async function baseWithDocument(name: string, content: string, chunking?: { maxChars: number; overlapChars: number }) {
  const api = t.api(key);
  const base = (await api.POST('/api/v1/knowledge-bases', { body: { name, ...(chunking ? { chunking } : {}) } })).data!;
  const document = (
    await api.POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: base.id } },
      body: { content, mediaType: 'text/markdown' },
    })
  ).data!;
  await documentsReady(api, base.id, 1);
  return { api, base, document };
}

/** Until the server's transaction waits for a row lock the test's own transaction holds. */
async function untilServerWaits() {
  await vi.waitFor(
    async () => {
      const { rows } = await ingestion.query(
        `select count(*)::int as waiting from pg_stat_activity
         where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
      );
      expect(rows[0].waiting).toBe(1);
    },
    { timeout: 30_000, interval: 20 },
  );
}

describe.runIf(dialect === 'postgres')('a base update that queues its documents again', () => {
  beforeAll(async () => {
    t = await startApp({ LOG_LEVEL: 'warn' }, { logLines });
    ({ key } = await t.tenant('acme'));
    ingestion = new pg.Client({ connectionString: t.config.databaseUrl });
    await ingestion.connect();
  });
  afterAll(async () => {
    await ingestion?.end();
    await t?.close();
  });

  it('takes the documents’ rows before the base’s, as an ingestion does: neither is aborted as a deadlock', async () => {
    const { api, base, document } = await baseWithDocument('Handbook', '# Leave\n\nStaff take leave by asking their lead a week ahead.');

    // The ingestion's commit: the document's row first.
    await ingestion.query('begin');
    await ingestion.query('update knowledge_documents set updated_at = updated_at where id = $1', [document.id]);
    const update = api.PATCH('/api/v1/knowledge-bases/{id}', {
      params: { path: { id: base.id } },
      body: { chunking: { maxChars: 400, overlapChars: 40 } },
    });
    // The update waits on the document's row (what it holds by then is what the order decides).
    await untilServerWaits();
    // Then the base's row, as addToBaseCounts does, and the commit.
    await ingestion.query('update knowledge_bases set chunk_count = chunk_count where id = $1', [base.id]);
    await ingestion.query('commit');

    const updated = await update;
    expect(updated.response.status).toBe(200);
    expect(updated.data!.chunking).toEqual({ maxChars: 400, overlapChars: 40 });
    const queued = await api.GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: base.id, documentId: document.id } },
    });
    expect(['queued', 'indexing', 'ready']).toContain(queued.data!.status);
  });

  it('answers 503 transaction_conflict with Retry-After when PostgreSQL aborts it as a deadlock, having changed nothing', async () => {
    const { api, base, document } = await baseWithDocument('Policies', 'Expenses are claimed within thirty days.', {
      maxChars: 600,
      overlapChars: 60,
    });

    // A writer taking the rows in the other order (none of the server's does, since the fix above):
    // the base's row, then, once the update holds the document's and waits for the base's, the document's.
    // Its own deadlock check waits 30 s, so the server's transaction (1 s) is the one aborted.
    await ingestion.query('begin');
    await ingestion.query(`set local deadlock_timeout = '30s'`);
    await ingestion.query('update knowledge_bases set chunk_count = chunk_count where id = $1', [base.id]);
    const update = api.PATCH('/api/v1/knowledge-bases/{id}', {
      params: { path: { id: base.id } },
      body: { chunking: { maxChars: 400, overlapChars: 40 } },
    });
    await untilServerWaits();
    await ingestion.query('update knowledge_documents set updated_at = updated_at where id = $1', [document.id]);
    await ingestion.query('rollback');

    const refused = await update;
    expect(refused.response.status).toBe(503);
    expect(refused.response.headers.get('retry-after')).toBe('1');
    expect(refused.error).toMatchObject({ code: 'transaction_conflict', status: 503 });
    // Logged as what it is, with PostgreSQL's own code, not as the database being away.
    expect(logLines.filter((l) => l.code === 'transaction_conflict')).toMatchObject([
      { msg: 'request failed: transaction conflict', dbCode: '40P01' },
    ]);
    const unchanged = await api.GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: base.id } } });
    expect(unchanged.data!.chunking).toEqual({ maxChars: 600, overlapChars: 60 });
    const still = await api.GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: base.id, documentId: document.id } },
    });
    expect(still.data!.status).toBe('ready');

    // Tried again, it goes through.
    const retried = await api.PATCH('/api/v1/knowledge-bases/{id}', {
      params: { path: { id: base.id } },
      body: { chunking: { maxChars: 400, overlapChars: 40 } },
    });
    expect(retried.response.status).toBe(200);
    expect(retried.data!.chunking).toEqual({ maxChars: 400, overlapChars: 40 });
  });
});
