import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { migrationProvider } from '../../src/db/migrations/index.js';
import type { Database } from '../../src/db/schema.js';
import * as store from '../../src/knowledge/store.js';
import { apiOf, dialect, startApp, startReplicas, type TestApp } from '../helpers/app.js';

/**
 * PostgreSQL's lexical document frequencies (migration 0030, docs/knowledge.md "Lexical search on
 * PostgreSQL"): knowledge_terms holds, per base, each lexeme of its chunks and how many chunks hold it
 * (the empty term: how many chunks there are), kept by ingestion, re-upload, re-index, deletes and two
 * replicas at once. Each check compares it with a count made from the chunks themselves. Search's
 * answers after each step are checked on both databases (SQLite's FTS5 keeps its own frequencies).
 */

type Api = ReturnType<TestApp['api']>;

/** A node of EXPLAIN's JSON plan. */
interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

function findNode(node: PlanNode, match: (n: PlanNode) => boolean): PlanNode | undefined {
  if (match(node)) return node;
  for (const child of node.Plans ?? []) {
    const found = findNode(child, match);
    if (found) return found;
  }
  return undefined;
}

/** knowledge_terms of the base, and the same counted from its chunks now: equal when kept right. */
async function termsAndRecount(t: Pick<TestApp, 'db'>, baseId: string) {
  const kept = await sql<{ term: string; chunks: number }>`select term, chunks from knowledge_terms
    where knowledge_base_id = ${baseId} order by term`.execute(t.db.kysely);
  const counted = await sql<{ term: string; chunks: number }>`select term, chunks::int from (
      select t.lexeme as term, count(*) as chunks from knowledge_chunks c cross join lateral unnest(c.tsv) as t
      where c.knowledge_base_id = ${baseId} group by t.lexeme
      union all select '', count(*) from knowledge_chunks where knowledge_base_id = ${baseId}) as recount
    where chunks > 0 order by term`.execute(t.db.kysely);
  return { kept: kept.rows, counted: counted.rows };
}

async function expectTermsRight(t: Pick<TestApp, 'db'>, baseId: string) {
  if (dialect !== 'postgres') return;
  const { kept, counted } = await termsAndRecount(t, baseId);
  expect(kept.length).toBeGreaterThan(1);
  expect(kept).toEqual(counted);
}

/** The chunks holding `term` as knowledge_terms says (0 when it has no row). */
async function chunksHolding(t: Pick<TestApp, 'db'>, baseId: string, term: string) {
  const row = await t.db.kysely
    .selectFrom('knowledge_terms')
    .select('chunks')
    .where('knowledge_base_id', '=', baseId)
    .where('term', '=', term)
    .executeTakeFirst();
  return row?.chunks ?? 0;
}

async function untilReady(api: Api, baseId: string, documents: number) {
  await vi.waitFor(
    async () => {
      const listed = await api.GET('/api/v1/knowledge-bases/{id}/documents', {
        params: { path: { id: baseId }, query: { status: 'ready', limit: 100 } },
      });
      expect(listed.data!.total).toBe(documents);
      expect(listed.data!.documents.every((d) => d.indexedVersion === d.version)).toBe(true);
    },
    { timeout: 60_000, interval: 100 },
  );
}

async function lexical(api: Api, baseId: string, query: string) {
  const res = await api.POST('/api/v1/knowledge-bases/{id}/search', {
    params: { path: { id: baseId } },
    body: { query, mode: 'lexical', k: 10 },
  });
  expect(res.response.status).toBe(200);
  return res.data!.passages.map((p) => p.citation.documentId);
}

describe(`lexical document frequencies (${dialect})`, () => {
  let t: TestApp;
  let api: Api;
  let tenantId: string;

  beforeAll(async () => {
    t = await startApp();
    const tenant = await t.tenant('acme');
    tenantId = tenant.id;
    api = t.api(tenant.key);
  });
  afterAll(() => t?.close());

  it('stay right through ingestion, re-upload, re-index, a document deleted and the base deleted', async () => {
    const { data: base } = await api.POST('/api/v1/knowledge-bases', { body: { name: 'Policies' } });
    const texts = [
      'The warranty of the Baxbrinoth kettle lasts 45 months.\n\nReturns are accepted within 30 days.',
      'The warranty of the Quenlix toaster lasts 12 months.\n\nShipping is free above 50 euros.',
      'Office hours are 9 to 5.\n\nThe warranty desk is on the second floor.',
    ];
    const ids: string[] = [];
    for (const content of texts) {
      const { data, response } = await api.POST('/api/v1/knowledge-bases/{id}/documents', {
        params: { path: { id: base!.id } },
        body: { content },
      });
      expect(response.status).toBe(202);
      ids.push(data!.id);
    }
    await untilReady(api, base!.id, 3);
    await expectTermsRight(t, base!.id);
    if (dialect === 'postgres') {
      expect(await chunksHolding(t, base!.id, 'warranti')).toBe(3);
      expect(await chunksHolding(t, base!.id, 'baxbrinoth')).toBe(1);
    }
    expect(await lexical(api, base!.id, 'Baxbrinoth')).toEqual([ids[0]]);

    // Re-upload: the new version's words replace the old one's.
    const put = await api.PUT('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: base!.id, documentId: ids[0] } },
      body: { content: 'The Zelkorvath blender has no warranty.\n\nIt is sold as seen.' },
    });
    expect(put.response.status).toBe(202);
    await untilReady(api, base!.id, 3);
    await expectTermsRight(t, base!.id);
    if (dialect === 'postgres') {
      expect(await chunksHolding(t, base!.id, 'baxbrinoth')).toBe(0);
      expect(await chunksHolding(t, base!.id, 'zelkorvath')).toBe(1);
    }
    expect(await lexical(api, base!.id, 'Baxbrinoth')).toEqual([]);
    expect(await lexical(api, base!.id, 'Zelkorvath')).toEqual([ids[0]]);

    // Re-index (new chunking): every document's chunks swapped again, in one chunk each now.
    const patched = await api.PATCH('/api/v1/knowledge-bases/{id}', {
      params: { path: { id: base!.id } },
      body: { chunking: { maxChars: 4000, overlapChars: 0 } },
    });
    expect(patched.response.status).toBe(200);
    await vi.waitFor(
      async () => {
        const got = await api.GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: base!.id } } });
        await untilReady(api, base!.id, 3);
        expect(got.data!.chunkCount).toBe(3);
      },
      { timeout: 60_000, interval: 100 },
    );
    await expectTermsRight(t, base!.id);
    if (dialect === 'postgres') expect(await chunksHolding(t, base!.id, '')).toBe(3);

    // A document deleted: its words' counts go down, those only it held go.
    const deleted = await api.DELETE('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
      params: { path: { id: base!.id, documentId: ids[1] } },
    });
    expect(deleted.response.status).toBe(204);
    await expectTermsRight(t, base!.id);
    if (dialect === 'postgres') {
      expect(await chunksHolding(t, base!.id, 'quenlix')).toBe(0);
      expect(await chunksHolding(t, base!.id, 'warranti')).toBe(2);
    }
    expect(await lexical(api, base!.id, 'Quenlix')).toEqual([]);
    expect(await lexical(api, base!.id, 'warranty')).toHaveLength(2);

    // Another tenant's delete of the base finds none, and leaves its counts.
    const other = t.api((await t.tenant('globex')).key);
    const refused = await other.DELETE('/api/v1/knowledge-bases/{id}', { params: { path: { id: base!.id } } });
    expect(refused.response.status).toBe(404);
    await expectTermsRight(t, base!.id);

    // The base deleted: nothing of it is left.
    const gone = await api.DELETE('/api/v1/knowledge-bases/{id}', { params: { path: { id: base!.id } } });
    expect(gone.response.status).toBe(204);
    if (dialect === 'postgres') {
      const { kept, counted } = await termsAndRecount(t, base!.id);
      expect(kept).toEqual([]);
      expect(counted).toEqual([]);
    }
  });

  it.runIf(dialect === 'postgres')(
    'bound what a question of a common word ranks: the chunks ranked stay within the bound, the best chunk is still first',
    async () => {
      const { data: base } = await api.POST('/api/v1/knowledge-bases', {
        body: { name: 'Common words', chunking: { maxChars: 200, overlapChars: 0 } },
      });
      // 120 paragraphs (60 chunks or more) holding "zephyr"; one also holds the rare "quasar", and "zephyr" thrice.
      const paragraphs = Array.from({ length: 120 }, (_, i) =>
        i === 77
          ? `Paragraph ${i}: the quasar zephyr zephyr zephyr, a note on number ${i}.`
          : `Paragraph ${i}: a zephyr passes over field number ${i} before the evening comes.`,
      );
      const { response } = await api.POST('/api/v1/knowledge-bases/{id}/documents', {
        params: { path: { id: base!.id } },
        body: { content: paragraphs.join('\n\n') },
      });
      expect(response.status).toBe(202);
      await untilReady(api, base!.id, 1);
      const chunks = await chunksHolding(t, base!.id, '');
      expect(chunks).toBeGreaterThanOrEqual(60);
      expect(await chunksHolding(t, base!.id, 'zephyr')).toBe(chunks);
      const scope = { tenantId, baseId: base!.id };

      // The statements a search sends, recorded, so the ranking's own can be explained.
      let statement: CompiledQuery | undefined;
      const recorded = new Kysely<Database>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: t.config.databaseUrl, max: 1 }) }),
        log: (event) => {
          if (event.level === 'query') statement = event.query;
        },
      });
      /**
       * The ranking, and how many chunks it ranked: the rows the sort by score was given, as EXPLAIN
       * ANALYZE counts them (counted, not timed; whatever plan PostgreSQL picks, a score is computed for
       * each row sorted).
       */
      const search = async (words: string[], candidates: number) => {
        const ranked = await store.rankWeighted(recorded, scope, await store.weighWords(recorded, scope.baseId, words), 5, candidates);
        const explained = await t.db.kysely.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
          CompiledQuery.raw(`explain (analyze, format json) ${statement!.sql}`, [...statement!.parameters]),
        );
        const sort = findNode(explained.rows[0]['QUERY PLAN'][0].Plan, (n) => n['Node Type'] === 'Sort');
        return { ranked, rows: sort!.Plans![0]['Actual Rows'] * sort!.Plans![0]['Actual Loops'] };
      };

      try {
        // Under the bound, every match is ranked.
        const every = await search(['zephyr'], 1000);
        expect(every.rows).toBe(chunks);
        // Over it: at most the bound's worth.
        const bounded = await search(['zephyr'], 10);
        expect(bounded.ranked).toHaveLength(5);
        expect(bounded.rows).toBeLessThanOrEqual(10);
        // The rare word's chunk is a candidate whatever the bound, and ranks first either way.
        const exact = await search(['quasar', 'zephyr'], 1000);
        expect(exact.rows).toBe(chunks);
        const rare = await search(['quasar', 'zephyr'], 10);
        expect(rare.rows).toBeLessThanOrEqual(20);
        expect(rare.ranked[0]).toEqual(exact.ranked[0]);
        const [top] = await store.chunksBySeq(t.db.kysely, scope.tenantId, [rare.ranked[0].seq]);
        expect(top.text).toContain('quasar');
      } finally {
        await recorded.destroy();
      }
    },
  );
});

describe.runIf(dialect === 'postgres')('migration 0030', () => {
  let t: TestApp;
  afterAll(() => t?.close());

  it('fills knowledge_terms from the chunks there are, as ingestion keeps it, and search ranks the same', async () => {
    t = await startApp();
    const api = t.api((await t.tenant('acme')).key);
    const { data: base } = await api.POST('/api/v1/knowledge-bases', {
      body: { name: 'Before', chunking: { maxChars: 200, overlapChars: 0 } },
    });
    const paragraphs = Array.from(
      { length: 30 },
      (_, i) => `Paragraph ${i} tells of harbour number ${i * 7}, its cranes${i % 3 ? '' : ' and tides'}.`,
    );
    await api.POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: base!.id } },
      body: { content: paragraphs.join('\n\n') },
    });
    await untilReady(api, base!.id, 1);
    const kept = (await termsAndRecount(t, base!.id)).kept;
    expect(kept.length).toBeGreaterThan(10);
    const search = async () =>
      (
        await api.POST('/api/v1/knowledge-bases/{id}/search', {
          params: { path: { id: base!.id } },
          body: { query: 'tides of harbour 63', mode: 'lexical' },
        })
      ).data!.passages.map((p) => [p.citation.position, p.citation.score]);
    const found = await search();
    expect(found.length).toBeGreaterThan(1);

    const migration = (await migrationProvider().getMigrations())['0030_knowledge_terms'];
    const db = t.db.kysely as unknown as Kysely<unknown>;
    await migration.down!(db);
    await migration.up(db);

    expect((await termsAndRecount(t, base!.id)).kept).toEqual(kept);
    expect(await search()).toEqual(found);
  });
});

describe.runIf(dialect === 'postgres')('lexical document frequencies with two replicas ingesting at once', () => {
  let replicas: Awaited<ReturnType<typeof startReplicas>>;

  beforeAll(async () => {
    replicas = await startReplicas(2);
  });
  afterAll(() => replicas?.close());

  it('add up: every chunk counted once, no increment lost', async () => {
    const [a, b] = replicas.replicas;
    const { apiKey } = await a.services.tenancy.createTenant('acme');
    const apis = [apiOf(a.app, apiKey), apiOf(b.app, apiKey)];
    const { data: base } = await apis[0].POST('/api/v1/knowledge-bases', { body: { name: 'Shared' } });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const { data, response } = await apis[i % 2].POST('/api/v1/knowledge-bases/{id}/documents', {
        params: { path: { id: base!.id } },
        body: { content: `Every document names the harbour and topic${i}.\n\nThe harbour master keeps document ${i}.` },
      });
      expect(response.status).toBe(202);
      ids.push(data!.id);
    }
    await untilReady(apis[1], base!.id, 40);
    await expectTermsRight(a, base!.id);
    expect(await chunksHolding(a, base!.id, 'harbour')).toBe(await chunksHolding(a, base!.id, ''));
    // Deletes through both replicas at once, while the counts they share move together.
    await Promise.all(
      ids
        .slice(0, 20)
        .map((id, i) =>
          apis[i % 2].DELETE('/api/v1/knowledge-bases/{id}/documents/{documentId}', { params: { path: { id: base!.id, documentId: id } } }),
        ),
    );
    await expectTermsRight(a, base!.id);
    expect(await chunksHolding(a, base!.id, 'topic3')).toBe(0);
    expect(await chunksHolding(a, base!.id, 'topic33')).toBe(1);
  });
});
