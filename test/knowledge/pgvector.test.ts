import type { LLMock } from '@copilotkit/aimock';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { providerEnv, startAimock } from '../helpers/aimock.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { keptOfExactTop10 } from '../helpers/knowledge.js';
import { knowledgeCorpus } from '../helpers/knowledge-corpus.js';
import { startPgvector } from '../helpers/pglite.js';

/**
 * Knowledge search through pgvector (issue 38, docs/knowledge.md "Vector"): the app on a PostgreSQL
 * with the extension (PGlite's pgvector build over the wire, test/helpers/pglite.ts; the suite's
 * PostgreSQL has none), so the pgvector upkeep (knowledge/pgvector.ts, run when the server listens)
 * gives chunks a `vector` copy and HNSW indexes, and search answers `vectorIndex: "pgvector"`: it keeps
 * what comparing every vector finds, filters hold, a replaced or deleted document's vectors leave, a
 * second model's dimension gets its own index, and a restart takes up what the path was missing.
 * It runs in the sqlite project only (vitest.config.ts): it brings its own database, whatever the project's.
 */

let pgvector: Awaited<ReturnType<typeof startPgvector>>;
let mock: LLMock;
let t: TestApp;
let key: string;
/** Reads PGlite's statistics and catalog beside the app (which index a search used, which exist). */
let inspector: pg.Client;
/** The large base: thousands of chunks of the built-in embedding (384 dimensions). */
let largeId: string;
let corpus: ReturnType<typeof knowledgeCorpus>;

type DocumentInput = { content: string; mediaType?: string; metadata?: Record<string, string | number> };
type SearchBody = { query: string; k?: number; mode?: 'hybrid' | 'lexical' | 'vector'; filters?: Record<string, unknown>; exact?: boolean };

const createBase = async (body: { name: string; embeddingModel?: string; chunking?: { maxChars: number; overlapChars: number } }) => {
  const { data, error, response } = await t.api(key).POST('/api/v1/knowledge-bases', { body });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!.id;
};
const addDocument = async (baseId: string, body: DocumentInput) => {
  const { data, error, response } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body });
  expect(response.status, JSON.stringify(error)).toBe(202);
  return data!.id;
};
/** Waits until the document's version `version` is ready. */
const ready = async (baseId: string, documentId: string, version = 1) => {
  await vi.waitFor(
    async () => {
      const { data } = await t
        .api(key)
        .GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', { params: { path: { id: baseId, documentId } } });
      expect(data?.version).toBe(version);
      expect(data?.status).toBe('ready');
    },
    { timeout: 60_000, interval: 50 },
  );
};
const search = async (baseId: string, body: SearchBody) => {
  const { data, error, response } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases/{id}/search', { params: { path: { id: baseId } }, body });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!;
};
const passage = (p: { citation: { documentId: string; position: number } }) => `${p.citation.documentId}:${p.citation.position}`;
/** How many scans of the HNSW index of `dims` dimensions PostgreSQL has counted. */
const indexScans = async (dims: number) => {
  await inspector.query('select pg_stat_force_next_flush()');
  await inspector.query('select 1');
  const { rows } = await inspector.query<{ scans: string }>(
    'select coalesce(sum(idx_scan), 0) as scans from pg_stat_user_indexes where indexrelname = $1',
    [`knowledge_chunks_vector_${dims}`],
  );
  return Number(rows[0].scans);
};
const indexExists = async (dims: number) =>
  (await inspector.query('select to_regclass($1) as index', [`knowledge_chunks_vector_${dims}`])).rows[0].index !== null;
/** Chunks of at most HNSW's 2,000 dimensions without their `vector` (null without the column). */
const chunksWithoutVector = async () => {
  const { rows } = await inspector.query<{ column: boolean }>(
    `select exists (select from information_schema.columns where table_name = 'knowledge_chunks' and column_name = 'embedding_vector') as column`,
  );
  if (!rows[0].column) return null;
  const missing = await inspector.query<{ n: string }>(
    'select count(*) as n from knowledge_chunks where embedding_vector is null and octet_length(embedding) between 4 and 8000',
  );
  return Number(missing.rows[0].n);
};
/** Starts the app on the pgvector database and listens, as a server starts: the upkeep begins then. */
const start = async () => {
  t = await startApp({ ...providerEnv(mock), DATABASE_URL: pgvector.url });
  expect(t.db.dialect).toBe('postgres');
  await t.listen();
};
/**
 * Restarts the server, and waits until its upkeep has given every chunk its vector and made the
 * built-in index, and this process's search takes the pgvector path (`probe` of the large base).
 */
const restart = async (probe: SearchBody) => {
  await t.close();
  await start();
  // Searched before the upkeep ends: this process's "no pgvector", if it sees one, must not outlive the upkeep.
  await search(largeId, probe);
  await vi.waitFor(
    async () => {
      expect(await chunksWithoutVector()).toBe(0);
      expect(await indexExists(384)).toBe(true);
      expect((await search(largeId, probe)).vectorIndex).toBe('pgvector');
    },
    { timeout: 60_000, interval: 100 },
  );
  // The planner's statistics, as autovacuum keeps them (see beforeAll).
  await inspector.query('analyze knowledge_chunks');
};

beforeAll(async () => {
  pgvector = await startPgvector();
  mock = await startAimock();
  inspector = new pg.Client({ connectionString: pgvector.url });
  await inspector.connect();
  await start();
  // The upkeep makes the built-in index last: the chunks written from then on carry their vectors.
  await vi.waitFor(async () => expect(await indexExists(384)).toBe(true), { timeout: 60_000, interval: 50 });
  ({ key } = await t.tenant('acme'));
  // 1,000 corpus documents in 10 uploads, chunked small: about 2,400 chunks, far more than a search's candidates.
  corpus = knowledgeCorpus({ documents: 1000, seed: 38 });
  largeId = await createBase({ name: 'Large', chunking: { maxChars: 200, overlapChars: 0 } });
  const uploads: string[] = [];
  for (let i = 0; i < corpus.documents.length; i += 100) {
    const content = corpus.documents
      .slice(i, i + 100)
      .map((d) => d.text)
      .join('\n\n');
    uploads.push(await addDocument(largeId, { content, mediaType: 'text/markdown', metadata: { part: i / 100 } }));
  }
  for (const id of uploads) await ready(largeId, id);
  // What autovacuum does on a server after a bulk load (PGlite runs no autovacuum): without the table's
  // statistics the planner takes the base for a few rows, and sorts them all rather than ask the index.
  await inspector.query('analyze knowledge_chunks');
}, 300_000);
afterAll(async () => {
  await inspector?.end();
  await t?.close();
  await mock?.stop();
  await pgvector?.close();
});

describe('knowledge search through pgvector', () => {
  it('the upkeep made the extension, the vector column and the built-in embedding’s HNSW index', async () => {
    const { rows } = await inspector.query(`select extversion from pg_extension where extname = 'vector'`);
    expect(rows).toHaveLength(1);
    expect(await indexExists(384)).toBe(true);
    const { rows: chunks } = await inspector.query<{ n: string; vectors: string }>(
      'select count(*) as n, count(embedding_vector) as vectors from knowledge_chunks',
    );
    expect(Number(chunks[0].n)).toBeGreaterThan(2000);
    expect(chunks[0].vectors).toBe(chunks[0].n);
  });

  it('over a base of thousands of chunks, the HNSW index finds what comparing every vector finds, with the exact cosines', async () => {
    const scansBefore = await indexScans(384);
    const keptOf = (queries: string[]) => keptOfExactTop10((body) => search(largeId, body), queries, 'pgvector');
    const questions = await keptOf(corpus.queries.slice(0, 60).map((q) => q.query));
    const passages = await keptOf(corpus.documents.slice(0, 30).map((d) => d.text.slice(0, 400)));
    const chunks = (await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: largeId } } })).data!.chunkCount;
    console.log(`pgvector (${chunks} chunks): kept ${questions.kept} (questions), ${passages.kept} (passages) of the exact top 10s`);
    expect(questions.compared).toBe(600);
    expect(questions.kept).toBeGreaterThanOrEqual(0.95);
    expect(passages.kept).toBeGreaterThanOrEqual(0.95);
    // The HNSW index answered them (not the exact comparison a short answer falls back on): once a search at least.
    expect((await indexScans(384)) - scansBefore).toBeGreaterThanOrEqual(90);
  });

  it('keeps to the filtered documents, and still finds k of them', async () => {
    const documents = (
      await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: largeId }, query: { limit: 100 } } })
    ).data!.documents;
    const part3 = documents.find((d) => d.metadata.part === 3)!.id;
    const part7 = documents.find((d) => d.metadata.part === 7)!.id;
    for (const [filters, allowed] of [
      [{ documentIds: [part7] }, [part7]],
      [{ metadata: { part: 3 } }, [part3]],
    ] as const) {
      for (const q of corpus.queries.slice(0, 10)) {
        const fast = await search(largeId, { query: q.query, mode: 'vector', k: 10, filters });
        const exact = await search(largeId, { query: q.query, mode: 'vector', k: 10, exact: true, filters });
        expect(fast.vectorIndex).toBe('pgvector');
        // A part holds about 200 chunks: k of them every time, all of the filter's documents.
        expect(fast.passages).toHaveLength(10);
        expect(new Set(fast.passages.map((p) => p.citation.documentId))).toEqual(new Set(allowed));
        const exactTop = new Set(exact.passages.map(passage));
        expect(fast.passages.filter((p) => exactTop.has(passage(p))).length).toBeGreaterThanOrEqual(9);
      }
    }
  });

  it('a replaced document’s old vectors and a deleted document’s leave the results', async () => {
    const query = 'quokka telemetry from the aurora observatory';
    const id = await addDocument(largeId, { content: `# Quokka\n\n${query} arrives hourly.` });
    await ready(largeId, id);
    const found = await search(largeId, { query, mode: 'vector', k: 5 });
    expect(found.vectorIndex).toBe('pgvector');
    expect(found.passages[0].citation.documentId).toBe(id);
    expect(found.passages[0].text).toContain('quokka telemetry');

    const replaced = await t.api(key).PUT('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: largeId, documentId: id } },
      body: { content: '# Wombat\n\nwombat burrow survey of the southern ridge.' },
    });
    expect(replaced.response.status).toBe(202);
    await ready(largeId, id, 2);
    const afterReplace = await search(largeId, { query, mode: 'vector', k: 50 });
    expect(afterReplace.vectorIndex).toBe('pgvector');
    expect(afterReplace.passages.some((p) => p.text.includes('quokka telemetry'))).toBe(false);
    const wombat = await search(largeId, { query: 'wombat burrow survey of the southern ridge', mode: 'vector', k: 5 });
    expect(wombat.passages[0].citation.documentId).toBe(id);

    const deleted = await t.api(key).DELETE('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: largeId, documentId: id } },
    });
    expect(deleted.response.status).toBe(204);
    const afterDelete = await search(largeId, { query: 'wombat burrow survey of the southern ridge', mode: 'vector', k: 50 });
    expect(afterDelete.vectorIndex).toBe('pgvector');
    expect(afterDelete.passages.some((p) => p.citation.documentId === id)).toBe(false);
  });

  it('a base of a provider’s model (1,536 dimensions) gets its own HNSW index when its first chunks are written', async () => {
    expect(await indexExists(1536)).toBe(false);
    const baseId = await createBase({
      name: 'Provider',
      embeddingModel: 'openai-compatible/nomic-embed-text',
      chunking: { maxChars: 200, overlapChars: 0 },
    });
    // 60 paragraphs, a chunk each: more than a search's 40 candidates.
    const paragraphs = corpus.documents.slice(0, 60).map((d) => d.text.slice(0, 150).replace(/\s+\S*$/, ''));
    const id = await addDocument(baseId, { content: paragraphs.join('\n\n') });
    await ready(baseId, id);
    expect(await indexExists(1536)).toBe(true);
    const chunks = (await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: baseId } } })).data!.chunkCount;
    expect(chunks).toBeGreaterThan(40);
    // aimock embeds a text the same way each time: a chunk's own text is its nearest (cosine 1).
    const { rows } = await inspector.query<{ text: string; vector: string }>(
      'select text, embedding_vector::text as vector from knowledge_chunks where document_id = $1 order by position limit 5',
      [id],
    );
    for (const { text } of rows) {
      const found = await search(baseId, { query: text, mode: 'vector', k: 3 });
      expect(found.vectorIndex).toBe('pgvector');
      expect(found.passages[0].text).toBe(text);
      expect(found.passages[0].citation.score).toBeCloseTo(1, 5);
    }
    // The base's 60 chunks are compared exactly by the planner's choice (fewer than the index would
    // visit); that the new index serves the search's expression, it shows when sorting is ruled out.
    await inspector.query('begin');
    try {
      await inspector.query('set local enable_sort = off');
      const nearest = `select text from knowledge_chunks where vector_dims(embedding_vector) = 1536
        order by embedding_vector::vector(1536) <=> '${rows[0].vector}'::vector(1536) limit 1`;
      const plan = (await inspector.query(`explain ${nearest}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toContain('Index Scan using knowledge_chunks_vector_1536');
      expect((await inspector.query(nearest)).rows[0].text).toBe(rows[0].text);
    } finally {
      await inspector.query('rollback');
    }
    // The built-in base is searched as before, through its own index.
    expect((await search(largeId, { query: corpus.queries[0].query, mode: 'vector' })).vectorIndex).toBe('pgvector');
  });

  it('a base with fewer chunks than a search’s candidates finds them all', async () => {
    const baseId = await createBase({ name: 'Small' });
    const a = await addDocument(baseId, { content: 'The cafeteria serves lunch from noon.' });
    const b = await addDocument(baseId, { content: 'Badges open the garage after hours.' });
    await ready(baseId, a);
    await ready(baseId, b);
    const found = await search(baseId, { query: 'when is lunch served in the cafeteria', mode: 'vector', k: 5 });
    expect(found.vectorIndex).toBe('pgvector');
    expect(found.passages.map((p) => p.citation.documentId)).toEqual([a, b]);
  });

  it('a server started after the vector column and indexes went (migration 0029 down) makes them again, and search finds the same passages', async () => {
    const vectors = async () =>
      (
        await inspector.query<{ seq: string; vector: string | null }>(
          'select seq, embedding_vector::text as vector from knowledge_chunks order by seq',
        )
      ).rows;
    const written = await vectors();
    expect(written.every((r) => r.vector !== null)).toBe(true);
    const query = { query: corpus.queries[1].query, mode: 'vector' as const, k: 10 };
    const found = await search(largeId, query);
    expect(found.vectorIndex).toBe('pgvector');

    // As a database where the extension was installed after migration 0029 ran: no column, no index.
    const migration = (await migrationProvider().getMigrations())['0029_knowledge_pgvector'];
    const db = t.db.kysely as unknown as Kysely<unknown>;
    await db.transaction().execute((trx) => migration.down!(trx));
    expect(await indexExists(384)).toBe(false);
    expect(await chunksWithoutVector()).toBeNull();

    await restart(query);
    expect(await vectors()).toEqual(written);
    expect(await indexExists(384)).toBe(true);
    // The provider base's dimension is among the chunks': its index is made again too.
    expect(await indexExists(1536)).toBe(true);
    const again = await search(largeId, query);
    expect(again.vectorIndex).toBe('pgvector');
    expect(again.passages.map((p) => [passage(p), p.citation.score])).toEqual(found.passages.map((p) => [passage(p), p.citation.score]));
  });

  it('chunks an older server wrote without their vector (a rolling upgrade) get it at the next start, and are found', async () => {
    const query = 'okapi sightings logged by the lighthouse keeper';
    const id = await addDocument(largeId, { content: `# Okapi\n\n${query} every dawn.` });
    await ready(largeId, id);
    const before = await search(largeId, { query, mode: 'vector', k: 5 });
    expect(before.passages[0].citation.documentId).toBe(id);
    // What a server of a version before pgvector writes: the chunk without its `vector`.
    const cleared = await inspector.query('update knowledge_chunks set embedding_vector = null where document_id = $1', [id]);
    expect(cleared.rowCount).toBeGreaterThan(0);
    const missed = await search(largeId, { query, mode: 'vector', k: 5 });
    expect(missed.vectorIndex).toBe('pgvector');
    expect(missed.passages.some((p) => p.citation.documentId === id)).toBe(false);
    // The upkeep finds them by its partial index, not by reading every chunk.
    const plan = await inspector.query(`explain select seq, embedding from knowledge_chunks
      where seq > 0 and embedding_vector is null and octet_length(embedding) between 4 and 8000 order by seq limit 1000`);
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('knowledge_chunks_without_vector');

    await restart({ query, mode: 'vector', k: 5 });
    const { rows } = await inspector.query<{ vectors: string }>(
      'select count(embedding_vector) as vectors from knowledge_chunks where document_id = $1',
      [id],
    );
    expect(Number(rows[0].vectors)).toBe(cleared.rowCount);
    const found = await search(largeId, { query, mode: 'vector', k: 5 });
    expect(found.vectorIndex).toBe('pgvector');
    expect(found.passages[0].citation.documentId).toBe(id);
    expect(found.passages[0].citation.score).toBeCloseTo(before.passages[0].citation.score, 5);
  });
});
