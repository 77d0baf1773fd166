import { type Insertable, type Kysely, type RawBuilder, type Selectable, type SelectQueryBuilder, sql, type Updateable } from 'kysely';
import { countRows, type Page } from '../db/count.js';
import type { Dialect } from '../db/database.js';
import { type ExportSource, exportPages } from '../db/export-pages.js';
import type { Database, KnowledgeBaseTable, KnowledgeChunkTable, KnowledgeDocumentTable } from '../db/schema.js';
import { int8Sketch, levelBits, uint8Sketch, vectorOf } from './embeddings.js';

/**
 * SQL for knowledge bases, their documents (each also its ingestion job) and the documents' chunks.
 * Every statement a request makes names its tenant; the ingestion worker's name the document it holds.
 */

type Executor = Kysely<Database>;
export type BaseRow = Selectable<KnowledgeBaseTable>;
/** A document's row: its fields and its ingestion's state. Its bytes are apart (knowledge_document_contents). */
export type DocumentRow = Selectable<KnowledgeDocumentTable>;
export type NewChunk = Insertable<KnowledgeChunkTable>;

// ---------------------------------------------------------------- knowledge bases

export async function insertBase(db: Executor, row: BaseRow): Promise<void> {
  await db.insertInto('knowledge_bases').values(row).execute();
}

export function findBase(db: Executor, tenantId: string, id: string): Promise<BaseRow | undefined> {
  return db.selectFrom('knowledge_bases').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

/** A tenant's bases, newest first. */
export async function listBases(db: Executor, tenantId: string, { limit, offset }: Page) {
  const q = db.selectFrom('knowledge_bases').where('tenant_id', '=', tenantId);
  const [rows, total] = await Promise.all([q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total };
}

/** The tenant's bases among `ids` (all of its bases when `ids` is undefined), by name. */
export function basesAmong(db: Executor, tenantId: string, ids: string[] | undefined, limit: number): Promise<BaseRow[]> {
  let q = db.selectFrom('knowledge_bases').selectAll().where('tenant_id', '=', tenantId);
  if (ids) q = q.where('id', 'in', ids);
  return q.orderBy('name').limit(limit).execute();
}

export function countBases(db: Executor, tenantId: string): Promise<number> {
  return countRows(db.selectFrom('knowledge_bases').where('tenant_id', '=', tenantId));
}

/**
 * Makes creations under one key (a tenant's bases, a base's documents) wait for each other until the
 * transaction ends, so each counts what the others committed: a PostgreSQL advisory lock. SQLite runs
 * one transaction at a time already.
 */
export async function lockForCreate(db: Executor, dialect: Dialect, key: string): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`select pg_advisory_xact_lock(hashtextextended(${`knowledge/${key}`}, 0))`.execute(db);
}

export async function updateBase(db: Executor, tenantId: string, id: string, patch: Updateable<KnowledgeBaseTable>): Promise<void> {
  await db.updateTable('knowledge_bases').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
}

/** Moves a base's counts by the given amounts (a document added or removed, a version's chunks swapped). */
export async function addToBaseCounts(
  db: Executor,
  id: string,
  { documents, chunks }: { documents: number; chunks: number },
): Promise<void> {
  await db
    .updateTable('knowledge_bases')
    .set((eb) => ({ document_count: eb('document_count', '+', documents), chunk_count: eb('chunk_count', '+', chunks) }))
    .where('id', '=', id)
    .execute();
}

/**
 * The base, its documents, their chunks and (PostgreSQL) its term counts: answers whether the base was
 * there. Documents first: deleting one waits for an ingestion that holds it, so the chunks deleted
 * next include those it committed. The terms before the base's row, the order ingestion takes them in
 * (store.addToTermCounts), and only of the tenant's base.
 */
export async function deleteBase(db: Executor, dialect: Dialect, tenantId: string, id: string): Promise<boolean> {
  await db.deleteFrom('knowledge_documents').where('tenant_id', '=', tenantId).where('knowledge_base_id', '=', id).execute();
  await db.deleteFrom('knowledge_document_contents').where('tenant_id', '=', tenantId).where('knowledge_base_id', '=', id).execute();
  await db.deleteFrom('knowledge_chunks').where('tenant_id', '=', tenantId).where('knowledge_base_id', '=', id).execute();
  if (dialect === 'postgres') {
    await db
      .deleteFrom('knowledge_terms')
      .where('knowledge_base_id', '=', id)
      .where(({ exists, selectFrom }) =>
        exists(selectFrom('knowledge_bases').select('id').where('tenant_id', '=', tenantId).where('id', '=', id)),
      )
      .execute();
  }
  const result = await db.deleteFrom('knowledge_bases').where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows === 1n;
}

// ---------------------------------------------------------------- documents

/** A new document: its row, and its bytes apart (ingestion's updates of the row then never write them again). */
export async function insertDocument(db: Executor, row: DocumentRow, content: Buffer): Promise<void> {
  await db.insertInto('knowledge_documents').values(row).execute();
  await db
    .insertInto('knowledge_document_contents')
    .values({ document_id: row.id, tenant_id: row.tenant_id, knowledge_base_id: row.knowledge_base_id, version: row.version, content })
    .execute();
}

/** The bytes of the document's `version`; undefined once it was replaced by a later one or deleted. */
export async function documentContent(db: Executor, id: string, version: number): Promise<Buffer | undefined> {
  const row = await db
    .selectFrom('knowledge_document_contents')
    .select('content')
    .where('document_id', '=', id)
    .where('version', '=', version)
    .executeTakeFirst();
  return row?.content;
}

function documentsOf(db: Executor, tenantId: string, baseId: string) {
  return db.selectFrom('knowledge_documents').where('tenant_id', '=', tenantId).where('knowledge_base_id', '=', baseId);
}

export function findDocument(db: Executor, tenantId: string, baseId: string, id: string): Promise<DocumentRow | undefined> {
  return documentsOf(db, tenantId, baseId).selectAll().where('id', '=', id).executeTakeFirst();
}

/** A base's documents, newest first; with `status`, those in it. */
export async function listDocuments(db: Executor, tenantId: string, baseId: string, status: string | undefined, { limit, offset }: Page) {
  let q = documentsOf(db, tenantId, baseId);
  if (status) q = q.where('status', '=', status);
  const [rows, total] = await Promise.all([q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total };
}

export function countDocuments(db: Executor, tenantId: string, baseId: string): Promise<number> {
  return countRows(documentsOf(db, tenantId, baseId));
}

/** What search filters read of a base's searchable documents: the whole list (a base holds at most 10,000). */
export function searchableDocuments(db: Executor, tenantId: string, baseId: string) {
  return documentsOf(db, tenantId, baseId)
    .select(['id', 'title', 'source_url', 'tags', 'metadata'])
    .where('indexed_version', 'is not', null)
    .execute();
}

/** The title and source of the documents passages come from. */
export function documentTitles(db: Executor, tenantId: string, ids: string[]) {
  return db
    .selectFrom('knowledge_documents')
    .select(['id', 'title', 'source_url'])
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .execute();
}

/** A new version of the document (its bytes, its fields), queued; its chunks stay until the new version is ready. */
export async function replaceDocument(
  db: Executor,
  tenantId: string,
  id: string,
  patch: Updateable<KnowledgeDocumentTable> & { version: number },
  content: Buffer,
): Promise<void> {
  await db.updateTable('knowledge_documents').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  await db
    .updateTable('knowledge_document_contents')
    .set({ version: patch.version, content })
    .where('tenant_id', '=', tenantId)
    .where('document_id', '=', id)
    .execute();
}

/**
 * Deletes the document and its chunks: answers the chunks it had and (PostgreSQL) their terms, or null
 * when it was not there. The row first: its delete waits for an ingestion holding it, so the chunks
 * deleted (and counted) after are those that ingestion committed.
 */
export async function deleteDocument(
  db: Executor,
  dialect: Dialect,
  tenantId: string,
  baseId: string,
  id: string,
): Promise<{ chunks: number; terms: TermCounts } | null> {
  const row = await db
    .deleteFrom('knowledge_documents')
    .where('tenant_id', '=', tenantId)
    .where('knowledge_base_id', '=', baseId)
    .where('id', '=', id)
    .returning('chunk_count')
    .executeTakeFirst();
  if (!row) return null;
  await db.deleteFrom('knowledge_document_contents').where('tenant_id', '=', tenantId).where('document_id', '=', id).execute();
  return { chunks: row.chunk_count, terms: await deleteChunks(db, dialect, id) };
}

/** Every document of the base queued to be indexed again (its embedding model or chunking changed). */
export async function requeueBase(db: Executor, tenantId: string, baseId: string, at: string): Promise<void> {
  await db
    .updateTable('knowledge_documents')
    .set({
      status: 'queued',
      progress: 0,
      attempts: 0,
      failure_reason: null,
      available_at: at,
      lease_owner: null,
      lease_expires_at: null,
      updated_at: at,
    })
    .where('tenant_id', '=', tenantId)
    .where('knowledge_base_id', '=', baseId)
    .execute();
}

// ---------------------------------------------------------------- ingestion: claims and leases

export interface ClaimInput {
  owner: string;
  now: string;
  leaseUntil: string;
}

/** Documents due for ingestion: queued and available, or indexing under a lease that lapsed (its process died). */
function claimable(db: Executor, now: string, limit: number): SelectQueryBuilder<Database, 'knowledge_documents', { id: string }> {
  return db
    .selectFrom('knowledge_documents')
    .select('id')
    .where((eb) =>
      eb.or([
        eb.and([eb('status', '=', 'queued'), eb('available_at', '<=', now)]),
        eb.and([eb('status', '=', 'indexing'), eb('lease_expires_at', '<', now)]),
      ]),
    )
    .orderBy('available_at')
    .orderBy('id')
    .limit(limit);
}

/**
 * Takes up to `limit` documents to ingest under this process's lease, one attempt more each, in one
 * statement: `with c as materialized (claimable) update ... from c`, the candidates locked with
 * `FOR UPDATE SKIP LOCKED` on PostgreSQL so replicas take different ones (the shape of the task
 * queue's claim, tasks/store/jobs.ts, and for its reasons).
 */
export async function claimDocuments(db: Executor, dialect: Dialect, claim: ClaimInput, limit: number): Promise<DocumentRow[]> {
  const candidates = claimable(db, claim.now, limit);
  const chosen = dialect === 'postgres' ? candidates.forUpdate().skipLocked() : candidates;
  const rows = await db
    .with(
      (cte) => cte('c').materialized(),
      () => chosen,
    )
    .updateTable('knowledge_documents')
    .from('c')
    .whereRef('knowledge_documents.id', '=', 'c.id')
    .set((eb) => ({
      status: 'indexing',
      lease_owner: claim.owner,
      lease_expires_at: claim.leaseUntil,
      attempts: eb('attempts', '+', 1),
      updated_at: claim.now,
    }))
    .returningAll()
    .execute();
  return rows as DocumentRow[];
}

/** Extends the leases of the documents this process is ingesting. */
export async function renewLeases(db: Executor, { owner, ids, until }: { owner: string; ids: string[]; until: string }): Promise<void> {
  await db
    .updateTable('knowledge_documents')
    .set({ lease_expires_at: until })
    .where('id', 'in', ids)
    .where('lease_owner', '=', owner)
    .where('status', '=', 'indexing')
    .execute();
}

/** The version of a document one process holds: a write about it lands only while that is still so. */
export interface HeldDocument {
  id: string;
  version: number;
  owner: string;
}

/** Moves a held document on (progress, failure, a later retry): true when it was still held. */
export async function updateHeld(db: Executor, held: HeldDocument, set: Updateable<KnowledgeDocumentTable>): Promise<boolean> {
  const result = await db
    .updateTable('knowledge_documents')
    .set(set)
    .where('id', '=', held.id)
    .where('version', '=', held.version)
    .where('lease_owner', '=', held.owner)
    .where('status', '=', 'indexing')
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

// ---------------------------------------------------------------- chunks

/**
 * Per lexeme of a set of chunks' tsvectors, how many of the chunks hold it; under the empty term, how
 * many chunks there are (PostgreSQL; empty on SQLite, whose FTS5 index keeps its own).
 */
export type TermCounts = Map<string, number>;

const termCounts = (rows: { term: string; chunks: number | string }[]): TermCounts =>
  new Map(rows.filter((r) => Number(r.chunks) > 0).map((r) => [r.term, Number(r.chunks)]));

/** Deletes a document's chunks: answers their term counts, counted in the statement that deletes them. */
export async function deleteChunks(db: Executor, dialect: Dialect, documentId: string): Promise<TermCounts> {
  if (dialect !== 'postgres') {
    await db.deleteFrom('knowledge_chunks').where('document_id', '=', documentId).execute();
    return new Map();
  }
  const result = await sql<{ term: string; chunks: string }>`with gone as (
      delete from knowledge_chunks where document_id = ${documentId} returning tsv)
    select t.lexeme as term, count(*) as chunks from gone cross join lateral unnest(gone.tsv) as t group by t.lexeme
    union all select '', count(*) from gone`.execute(db);
  return termCounts(result.rows);
}

/** The term counts of a document's chunks (PostgreSQL): after its chunks were swapped, of the new ones. */
export async function documentTermCounts(db: Executor, documentId: string): Promise<TermCounts> {
  const result = await sql<{ term: string; chunks: string }>`select t.lexeme as term, count(*) as chunks
    from knowledge_chunks c cross join lateral unnest(c.tsv) as t where c.document_id = ${documentId} group by t.lexeme
    union all select '', count(*) from knowledge_chunks where document_id = ${documentId}`.execute(db);
  return termCounts(result.rows);
}

/**
 * Moves a base's term counts (PostgreSQL) by the chunks `added` less those `removed`, in one statement
 * of increments, so replicas ingesting into one base at once each add theirs (no lost update). The
 * terms are upserted in order, so two transactions lock the rows they share in the same order and
 * never wait on each other in a circle; terms no chunk holds any more are then deleted (rows this
 * transaction already locked). Every writer takes a document's row, then the terms, then the base's row.
 */
export async function addToTermCounts(db: Executor, baseId: string, added: TermCounts, removed: TermCounts): Promise<void> {
  const change = new Map(added);
  for (const [term, chunks] of removed) change.set(term, (change.get(term) ?? 0) - chunks);
  const terms = [...change.keys()].filter((t) => change.get(t) !== 0).sort();
  if (!terms.length) return;
  const chunks = terms.map((t) => change.get(t)!);
  const counted = await sql<{ term: string; chunks: number }>`insert into knowledge_terms (knowledge_base_id, term, chunks)
    select ${baseId}, d.term, d.chunks from unnest(${terms}::text[], ${chunks}::int[]) as d(term, chunks) order by d.term
    on conflict (knowledge_base_id, term) do update set chunks = knowledge_terms.chunks + excluded.chunks
    returning term, chunks`.execute(db);
  const unheld = counted.rows.filter((r) => r.chunks <= 0).map((r) => r.term);
  if (unheld.length) {
    await db.deleteFrom('knowledge_terms').where('knowledge_base_id', '=', baseId).where('term', 'in', unheld).execute();
  }
}

/** Rows per INSERT: 14 parameters each stays well inside both databases' limits. */
const INSERT_BATCH = 500;

/**
 * Chunks written with their embedding's sketch for vector search's first pass (migration 0027), and
 * with `pgvector` (the chunks have their `vector` column: pgvector.ts) as a `vector` too, up to HNSW's dimensions.
 */
export async function insertChunks(db: Executor, dialect: Dialect, rows: NewChunk[], pgvector = false): Promise<void> {
  const sketched = rows.map((r) => {
    const v = vectorOf(r.embedding);
    if (dialect !== 'postgres') return { ...r, embedding_int8: int8Sketch(v) };
    const sketches = { ...r, embedding_levels: levelBits(v), embedding_uint8: uint8Sketch(v) };
    return pgvector && indexable(v.length) ? { ...sketches, embedding_vector: vectorText(v) } : sketches;
  });
  for (let i = 0; i < sketched.length; i += INSERT_BATCH) {
    await db
      .insertInto('knowledge_chunks')
      .values(sketched.slice(i, i + INSERT_BATCH))
      .execute();
  }
}

export interface ChunkScope {
  tenantId: string;
  baseId: string;
  /** Only chunks of these documents (filters); undefined: every document of the base. */
  documentIds?: string[];
}

export interface RankedChunk {
  seq: number;
  score: number;
}

/**
 * SQLite's lexical search: the chunks best matching `words`, best first, by FTS5's bm25 over an OR of
 * the words, each quoted (the score is bm25 negated, higher better). The words are letters and digits
 * only, so no user text reaches the query language as syntax. PostgreSQL's is weighWords then rankWeighted.
 */
export async function lexicalSearch(db: Executor, scope: ChunkScope, words: string[], limit: number): Promise<RankedChunk[]> {
  const documents = inDocuments(scope, 'c.');
  // The base is a column of the index (migration 0026): FTS5 intersects its postings with the words',
  // so no matching chunk's row is read. Its weight is 0: bm25 ranks by the words alone. The tenant is
  // the base's (the service looked the base up by tenant), and the chunks shown are read by tenant again.
  const match = `base : "${baseToken(scope.baseId)}" AND text : (${words.map((w) => `"${w}"`).join(' OR ')})`;
  const result = scope.documentIds
    ? await sql<{ seq: number; score: number }>`select c.seq, -bm25(knowledge_chunks_fts, 1.0, 0.0) as score
      from knowledge_chunks_fts(${match}) join knowledge_chunks c on c.seq = knowledge_chunks_fts.rowid
      where c.tenant_id = ${scope.tenantId} ${documents}
      order by bm25(knowledge_chunks_fts, 1.0, 0.0), c.seq limit ${limit}`.execute(db)
    : await sql<{ seq: number; score: number }>`select rowid as seq, -bm25(knowledge_chunks_fts, 1.0, 0.0) as score
      from knowledge_chunks_fts(${match})
      order by bm25(knowledge_chunks_fts, 1.0, 0.0), rowid limit ${limit}`.execute(db);
  return result.rows.map((r) => ({ seq: Number(r.seq), score: Number(r.score) }));
}

/**
 * A word of a PostgreSQL lexical query, with its document frequency among the base's chunks and its
 * weight: ts_rank alone weighs every word alike (PostgreSQL keeps no document frequencies), so each
 * word's is weighted by its inverse document frequency, BM25's idf (docs/knowledge.md, "Lexical search
 * on PostgreSQL"), from knowledge_terms (kept at ingestion) rather than counted per query.
 */
export interface WeightedWord {
  word: string;
  df: number;
  idf: number;
}

/**
 * The words the base's chunks hold, each with its document frequency and BM25's idf, rarest first. A
 * word's frequency is its lexeme's (the `english` configuration's, as the chunks' tsvectors hold them),
 * the empty term's the base's chunk count (migration 0030).
 */
export async function weighWords(db: Executor, baseId: string, words: string[]): Promise<WeightedWord[]> {
  const counted = await sql<{
    word: string;
    df: number;
    n: number | null;
  }>`select w.word, min(coalesce(k.chunks, 0)) as df, max(n.chunks) as n
    from unnest(${words}::text[]) as w(word)
    cross join lateral unnest(to_tsvector('english', w.word)) as t
    left join knowledge_terms k on k.knowledge_base_id = ${baseId} and k.term = t.lexeme
    left join knowledge_terms n on n.knowledge_base_id = ${baseId} and n.term = ''
    group by w.word`.execute(db);
  return counted.rows
    .map((r) => ({ word: r.word, df: Number(r.df), n: Number(r.n) }))
    .filter((r) => r.df > 0)
    .map((r) => ({ word: r.word, df: r.df, idf: Math.log(1 + (r.n - r.df + 0.5) / (r.df + 0.5)) }))
    .sort((a, b) => a.df - b.df || (a.word < b.word ? -1 : 1));
}

/**
 * The chunks best matching `weighted` (rarest first), ranked by the sum of each word's ts_rank times its
 * idf. When the words' chunks together are at most `candidates`, every matching chunk is ranked.
 * Beyond, a first pass picks, without ranking (the GIN index's postings and a LIMIT, in no particular
 * order), at most `candidates` chunks holding the rarest words (while their chunks add up to at most
 * `candidates`; at least the rarest), at most `candidates` holding every word, and with a filter at
 * most `candidates` of its documents' matches; only those are ranked, so a question of common words
 * ranks a bounded part of the base (docs/knowledge.md, "The bound").
 */
export async function rankWeighted(
  db: Executor,
  scope: ChunkScope,
  weighted: WeightedWord[],
  limit: number,
  candidates: number,
): Promise<RankedChunk[]> {
  const score = sql.join(
    weighted.map((w) => sql`${w.idf}::float8 * ts_rank(c.tsv, plainto_tsquery('english', ${w.word}), 1)`),
    sql` + `,
  );
  // The tenant and base written so that no index of theirs can serve them: PostgreSQL then finds the
  // words' chunks by the GIN index alone. Without statistics (a table not analyzed yet) it preferred
  // the base's btree index and read every chunk of the base (docs/benchmarks.md, "Knowledge: scale").
  const inScope = sql`c.tenant_id || '' = ${scope.tenantId} and c.knowledge_base_id || '' = ${scope.baseId} ${inDocuments(scope, 'c.')}`;
  const anyOf = (ws: WeightedWord[]) => sql`websearch_to_tsquery('english', ${ws.map((w) => w.word).join(' or ')})`;
  const matches = weighted.reduce((sum, w) => sum + w.df, 0);
  let result: { rows: { seq: string; score: number }[] };
  if (matches <= candidates) {
    result = await sql<{ seq: string; score: number }>`select c.seq, (${score}) as score
      from knowledge_chunks c where c.tsv @@ ${anyOf(weighted)} and ${inScope}
      order by score desc, c.seq limit ${limit}`.execute(db);
  } else {
    const firstPass = (query: RawBuilder<unknown>) =>
      sql`(select c.seq from knowledge_chunks c where c.tsv @@ ${query} and ${inScope} limit ${candidates})`;
    const passes = [firstPass(anyOf(rarest(weighted, candidates)))];
    // Of several words, the chunks holding them all, rare or common (websearch's AND).
    if (weighted.length > 1) passes.push(firstPass(sql`websearch_to_tsquery('english', ${weighted.map((w) => w.word).join(' ')})`));
    // The frequencies are the base's: the filtered documents may hold few matches, then every one is ranked.
    if (scope.documentIds) passes.push(firstPass(anyOf(weighted)));
    // The candidates as an array: each chunk read by its key, where a join would scan the whole table.
    result = await sql<{ seq: string; score: number }>`select c.seq, (${score}) as score from knowledge_chunks c
      where c.seq = any(array(${sql.join(passes, sql` union `)}))
      order by score desc, c.seq limit ${limit}`.execute(db);
  }
  return result.rows.map((r) => ({ seq: Number(r.seq), score: Number(r.score) }));
}

/** The rarest words (`weighted` is by frequency) while their chunks add up to at most `bound`; at least the rarest. */
function rarest<W extends { df: number }>(weighted: W[], bound: number): W[] {
  let chunks = weighted[0].df;
  let n = 1;
  while (n < weighted.length && chunks + weighted[n].df <= bound) chunks += weighted[n++].df;
  return weighted.slice(0, n);
}

/**
 * A base's id as SQLite's full-text index holds it (migration 0026): without hyphens and ending in a
 * digit, one token the porter stemmer leaves whole; quoted for an FTS5 string (`"` doubled).
 */
const baseToken = (baseId: string) => `${baseId.replaceAll('-', '')}0`.replaceAll('"', '""');

/** A page of a base's vectors of one model, by seq after `afterSeq`: the exact vector search reads them all. */
export async function vectorPage(db: Executor, scope: ChunkScope, model: string, afterSeq: number, limit: number) {
  let q = db
    .selectFrom('knowledge_chunks')
    .select(['seq', 'embedding'])
    .where('tenant_id', '=', scope.tenantId)
    .where('knowledge_base_id', '=', scope.baseId)
    .where('embedding_model', '=', model)
    .where('seq', '>', afterSeq);
  if (scope.documentIds) q = q.where('document_id', 'in', scope.documentIds);
  const rows = await q.orderBy('seq').limit(limit).execute();
  return rows.map((r) => ({ seq: Number(r.seq), embedding: r.embedding }));
}

/**
 * The nearest vectors of a base's model by cosine, in SQLite by sqlite-vec, in two passes: the
 * `candidates` nearest by their int8 sketches (L2, which ranks normalised vectors as cosine does),
 * read from the index that holds the sketches, then those ranked by their exact cosine. Best first,
 * the score the cosine similarity. A vector of zeros (a chunk without words) has no direction: its
 * distance is null, counted as 1 (cosine 0) as the in-process dot product counts it.
 */
export async function nearestVectors(
  db: Executor,
  scope: ChunkScope,
  model: string,
  query: { embedding: Buffer; sketch: Buffer },
  candidates: number,
  limit: number,
): Promise<RankedChunk[]> {
  const documents = inDocuments(scope);
  // Named, so the planner reads the narrow index rather than every chunk's row.
  const result = await sql<{ seq: number; distance: number }>`with candidates as (
      select seq from knowledge_chunks indexed by knowledge_chunks_vectors
      where tenant_id = ${scope.tenantId} and knowledge_base_id = ${scope.baseId} and embedding_model = ${model} ${documents}
      order by vec_distance_l2(vec_int8(embedding_int8), vec_int8(${query.sketch})), seq limit ${candidates})
    select c.seq, coalesce(vec_distance_cosine(c.embedding, ${query.embedding}), 1) as distance
    from candidates join knowledge_chunks c on c.seq = candidates.seq
    order by distance, c.seq limit ${limit}`.execute(db);
  return result.rows.map((r) => ({ seq: Number(r.seq), score: 1 - Number(r.distance) }));
}

/**
 * PostgreSQL's first pass for a dense query: the `limit` vectors of a base's model whose levels best
 * match the query's (embeddings.ts levelBits and levelMasks: the dot product of the two vectors'
 * levels), with their embeddings for the exact ranking. Read from the index that holds the levels.
 */
export async function vectorCandidates(
  db: Executor,
  scope: ChunkScope,
  model: string,
  query: { agree: [string, string]; oppose: [string, string] },
  limit: number,
) {
  const [agree, strongAgree] = query.agree;
  const [oppose, strongOppose] = query.oppose;
  return candidatesBy(
    db,
    scope,
    model,
    sql`bit_count(embedding_levels & ${oppose}::varbit) + bit_count(embedding_levels & ${strongOppose}::varbit)
        - bit_count(embedding_levels & ${agree}::varbit) - bit_count(embedding_levels & ${strongAgree}::varbit)`,
    limit,
  );
}

/**
 * PostgreSQL's first pass for a word-sparse query: the `limit` vectors of a base's model with the
 * largest dot product of their int8 sketch (offset by 128, embeddings.ts uint8Sketch) with the query's
 * few non-zero components as integer weights, with their embeddings for the exact ranking. Read from
 * the index that holds the sketches. The offset adds the same 128 times the weights' sum to every
 * chunk, so it leaves the order as it is.
 */
export async function sparseVectorCandidates(
  db: Executor,
  scope: ChunkScope,
  model: string,
  weights: { dimension: number; weight: number }[],
  limit: number,
) {
  const score = sql.join(
    weights.map((w) => sql`get_byte(embedding_uint8, ${w.dimension}::int) * ${w.weight}::int`),
    sql` + `,
  );
  return candidatesBy(db, scope, model, sql`${score} desc`, limit);
}

/** PostgreSQL's first pass: the `limit` chunks of a base's model first by `order` (then by seq), with their embeddings. */
async function candidatesBy(db: Executor, scope: ChunkScope, model: string, order: RawBuilder<unknown>, limit: number) {
  const result = await sql<{ seq: number | string; embedding: Buffer }>`select seq, embedding from knowledge_chunks where seq in (
      select seq from knowledge_chunks
      where tenant_id = ${scope.tenantId} and knowledge_base_id = ${scope.baseId} and embedding_model = ${model} ${inDocuments(scope)}
      order by ${order}, seq limit ${limit})
    order by seq`.execute(db);
  return result.rows.map((r) => ({ seq: Number(r.seq), embedding: r.embedding }));
}

/** The filter's documents as a condition of a raw statement (none: every document), of the table aliased `alias`. */
const inDocuments = (scope: ChunkScope, alias: '' | 'c.' = '') =>
  scope.documentIds ? sql`and ${sql.raw(alias)}document_id in (${sql.join(scope.documentIds)})` : sql``;

/** pgvector's HNSW indexes `vector` of at most this many dimensions (halfvec 4,000); beyond, search keeps the sketches. */
const HNSW_MAX_DIMENSIONS = 2000;

/** Whether vectors of `dims` dimensions get pgvector's copy and index. */
export const indexable = (dims: number) => dims > 0 && dims <= HNSW_MAX_DIMENSIONS;

/** A vector as pgvector reads it: each float32 written exactly (a double's shortest form parses back to the same float). */
const vectorText = (v: Float32Array) => `[${v.join(',')}]`;

/**
 * Whether chunks have pgvector's copy of their embeddings: the upkeep (pgvector.ts) made the column,
 * gave every chunk its vector, then the built-in embedding's index, last (told by its name, so no
 * catalog table is read).
 */
export async function hasVectorColumn(db: Executor): Promise<boolean> {
  const result = await sql<{ ready: boolean }>`select to_regclass('knowledge_chunks_vector_384') is not null as ready`.execute(db);
  return result.rows[0]?.ready === true;
}

/**
 * Whether this PostgreSQL offers pgvector (the function behind the `pg_available_extensions` view),
 * and whether this database has it created (its type is there).
 */
export async function vectorExtension(db: Executor): Promise<{ available: boolean; created: boolean }> {
  const result = await sql<{ available: boolean; created: boolean }>`select
    exists (select from pg_available_extensions() as e where e.name = 'vector') as available,
    to_regtype('vector') is not null as created`.execute(db);
  return { available: result.rows[0]?.available === true, created: result.rows[0]?.created === true };
}

/** Creates pgvector in this database: refused unless the role may (a superuser's, or a trusted extension's database owner). */
export async function createVectorExtension(db: Executor): Promise<void> {
  await sql`create extension if not exists vector`.execute(db);
}

export async function addVectorColumn(db: Executor): Promise<void> {
  await sql`alter table knowledge_chunks add column if not exists embedding_vector vector`.execute(db);
}

/** Chunks owed a `vector`: none, whose embedding HNSW indexes (1..2,000 float32s; beyond, none on purpose). */
const WITHOUT_VECTOR = sql`embedding_vector is null and octet_length(embedding) between 4 and ${sql.lit(HNSW_MAX_DIMENSIONS * 4)}`;

/**
 * The index of the chunks owed a `vector` (partial, empty once they have it): each start's upkeep finds
 * them without reading every chunk. Written literally in both, so the planner sees the query implies it.
 */
export async function createWithoutVectorIndex(db: Executor): Promise<void> {
  const made = await sql<{ made: boolean }>`select to_regclass('knowledge_chunks_without_vector') is not null as made`.execute(db);
  if (made.rows[0]?.made) return;
  await sql`create index if not exists knowledge_chunks_without_vector on knowledge_chunks (seq) where ${WITHOUT_VECTOR}`.execute(db);
}

/** A page, by seq after `afterSeq`, of chunks owed a `vector`. */
export async function chunksWithoutVector(db: Executor, afterSeq: number, limit: number) {
  const result = await sql<{ seq: number | string; embedding: Buffer }>`select seq, embedding from knowledge_chunks
    where seq > ${afterSeq} and ${WITHOUT_VECTOR}
    order by seq limit ${limit}`.execute(db);
  return result.rows.map((r) => ({ seq: Number(r.seq), embedding: r.embedding }));
}

/** Gives chunks their `vector` (each at most HNSW's dimensions), those that still have none. */
export async function setVectors(db: Executor, rows: { seq: number; vector: Float32Array }[]): Promise<void> {
  if (!rows.length) return;
  const values = rows.map((r) => sql`(${r.seq}::bigint, ${vectorText(r.vector)}::vector)`);
  await sql`update knowledge_chunks set embedding_vector = v.embedding
    from (values ${sql.join(values)}) as v (seq, embedding)
    where knowledge_chunks.seq = v.seq and knowledge_chunks.embedding_vector is null`.execute(db);
}

/** The dimensions of the chunks' vectors (every chunk read: asked only until the built-in index shows a finished upkeep). */
export async function vectorDimensions(db: Executor): Promise<number[]> {
  const result = await sql<{ dims: number }>`select distinct vector_dims(embedding_vector) as dims from knowledge_chunks
    where embedding_vector is not null`.execute(db);
  return result.rows.map((r) => Number(r.dims));
}

/**
 * Takes the pgvector upkeep's session lock on this connection if no other replica holds it: one upkeep
 * at a time; the others skip it (the lock ends with the session, should the process die).
 */
export async function tryLockVectorUpkeep(db: Executor): Promise<boolean> {
  const result = await sql<{
    locked: boolean;
  }>`select pg_try_advisory_lock(hashtextextended('knowledge/vector-upkeep', 0)) as locked`.execute(db);
  return result.rows[0]?.locked === true;
}

export async function unlockVectorUpkeep(db: Executor): Promise<void> {
  await sql`select pg_advisory_unlock(hashtextextended('knowledge/vector-upkeep', 0))`.execute(db);
}

/**
 * The HNSW index of chunks' vectors of `dims` dimensions, made when a dimension is first written or
 * by the upkeep: pgvector's pattern for several dimensions in one column, an expression index cast to
 * the dimension, partial on it. Under an advisory lock, as replicas may ingest the first chunks of a
 * dimension at once.
 */
export async function createVectorIndex(db: Executor, dims: number): Promise<void> {
  const d = dimensions(dims);
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended('knowledge/vector-index', 0))`.execute(trx);
    await sql`create index if not exists ${sql.raw(`knowledge_chunks_vector_${d}`)} on knowledge_chunks
      using hnsw ((embedding_vector::vector(${sql.raw(d)})) vector_cosine_ops) where vector_dims(embedding_vector) = ${sql.raw(d)}`.execute(
      trx,
    );
  });
}

/** A dimension count as SQL takes it in a type and an index's name: an integer HNSW indexes, else refused. */
function dimensions(dims: number): string {
  if (!Number.isInteger(dims) || !indexable(dims))
    throw new Error(`pgvector's HNSW index takes 1..${HNSW_MAX_DIMENSIONS} dimensions, not ${dims}`);
  return String(dims);
}

/**
 * The HNSW scan's candidate list (`hnsw.ef_search`): pgvector's largest. The built-in embedding's
 * questions are few components over thousands of chunks sharing words, where the graph's neighbours are
 * near ties: at 2,800 chunks, 400 kept 96% of the exact top 10s and 1,000 kept 99.7%, in the same time.
 */
const EF_SEARCH = 1000;

/**
 * pgvector's first pass: the `limit` vectors of a base's model nearest the query by cosine, read from
 * the HNSW index of the query's dimension, with their embeddings for the exact ranking. The index holds
 * every tenant's chunks, so the base's are found by an iterative scan (pgvector 0.8: the scan goes on
 * until `limit` pass the filter, up to hnsw.max_scan_tuples), in `relaxed_order`, sorted again here.
 * The settings are the transaction's own.
 */
export async function pgvectorNearest(db: Executor, scope: ChunkScope, model: string, query: Float32Array, limit: number) {
  const d = sql.raw(dimensions(query.length));
  return db.transaction().execute(async (trx) => {
    await sql`select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', ${String(EF_SEARCH)}, true)`.execute(
      trx,
    );
    const result = await sql<{ seq: number | string; embedding: Buffer }>`with nearest as materialized (
        select seq, embedding, embedding_vector::vector(${d}) <=> ${vectorText(query)}::vector(${d}) as distance
        from knowledge_chunks
        where vector_dims(embedding_vector) = ${d}
          and tenant_id = ${scope.tenantId} and knowledge_base_id = ${scope.baseId} and embedding_model = ${model} ${inDocuments(scope)}
        order by embedding_vector::vector(${d}) <=> ${vectorText(query)}::vector(${d}) limit ${limit})
      select seq, embedding from nearest order by distance, seq`.execute(trx);
    return result.rows.map((r) => ({ seq: Number(r.seq), embedding: r.embedding }));
  });
}

/**
 * pgvector's exact ranking, when the HNSW scan found fewer than asked for (a base or filter whose
 * chunks are few among the index's): the `limit` nearest of the base's model, every one compared in
 * the database (no index is on this expression), with their embeddings.
 */
export async function pgvectorExact(db: Executor, scope: ChunkScope, model: string, query: Float32Array, limit: number) {
  const d = sql.raw(dimensions(query.length));
  const result = await sql<{ seq: number | string; embedding: Buffer }>`select seq, embedding from knowledge_chunks
    where vector_dims(embedding_vector) = ${d}
      and tenant_id = ${scope.tenantId} and knowledge_base_id = ${scope.baseId} and embedding_model = ${model} ${inDocuments(scope)}
    order by embedding_vector <=> ${vectorText(query)}::vector, seq limit ${limit}`.execute(db);
  return result.rows.map((r) => ({ seq: Number(r.seq), embedding: r.embedding }));
}

/** One chunk of a document's version, by its position: what a citation points at. */
export function findChunk(db: Executor, tenantId: string, baseId: string, documentId: string, version: number, position: number) {
  return db
    .selectFrom('knowledge_chunks')
    .select(['position', 'heading_path', 'text'])
    .where('tenant_id', '=', tenantId)
    .where('knowledge_base_id', '=', baseId)
    .where('document_id', '=', documentId)
    .where('version', '=', version)
    .where('position', '=', position)
    .executeTakeFirst();
}

/** The chunks search ranked, to show. */
export async function chunksBySeq(db: Executor, tenantId: string, seqs: number[]) {
  const rows = await db
    .selectFrom('knowledge_chunks')
    .select(['seq', 'knowledge_base_id', 'document_id', 'position', 'heading_path', 'text'])
    .where('tenant_id', '=', tenantId)
    .where('seq', 'in', seqs)
    .execute();
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}

/**
 * `agentry export` (export/tenant.ts): the tenant's knowledge bases and documents, each document's row
 * with its bytes (`content`, as the rows held them before they were kept apart), a page at a time.
 * Chunks are not exported: they follow from the documents and the base's settings, so an imported
 * document is queued to be indexed again, by whichever replica claims it.
 */
export function exportSources(db: Executor, tenantId: string): ExportSource[] {
  const [bases] = exportPages(db, tenantId, [{ table: 'knowledge_bases', keys: ['id'], imported: (row) => ({ ...row, chunk_count: 0 }) }]);
  const documents: ExportSource = {
    table: 'knowledge_documents',
    page: (after, limit) => {
      let q = db
        .selectFrom('knowledge_documents as d')
        .innerJoin('knowledge_document_contents as c', 'c.document_id', 'd.id')
        .selectAll('d')
        .select('c.content')
        .where('d.tenant_id', '=', tenantId);
      if (after) q = q.where('d.id', '>', String(after.id));
      return q.orderBy('d.id').limit(limit).execute();
    },
    imported: ({ content: _, ...row }) => ({
      ...row,
      status: 'queued',
      indexed_version: null,
      failure_reason: null,
      progress: 0,
      chunk_count: 0,
      attempts: 0,
      lease_owner: null,
      lease_expires_at: null,
      indexed_at: null,
    }),
    carries: {
      table: 'knowledge_document_contents',
      row: (row) => ({
        document_id: row.id,
        tenant_id: row.tenant_id,
        knowledge_base_id: row.knowledge_base_id,
        version: row.version,
        content: row.content,
      }),
    },
  };
  return [bases, documents];
}
