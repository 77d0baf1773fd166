import { type Insertable, type Kysely, type RawBuilder, type Selectable, type SelectQueryBuilder, sql, type Updateable } from 'kysely';
import { countRows, type Page } from '../db/count.js';
import type { Dialect } from '../db/database.js';
import { exportPages } from '../db/export-pages.js';
import type { Database, KnowledgeBaseTable, KnowledgeChunkTable, KnowledgeDocumentTable } from '../db/schema.js';
import { int8Sketch, levelBits, uint8Sketch, vectorOf } from './embeddings.js';

/**
 * SQL for knowledge bases, their documents (each also its ingestion job) and the documents' chunks.
 * Every statement a request makes names its tenant; the ingestion worker's name the document it holds.
 */

type Executor = Kysely<Database>;
export type BaseRow = Selectable<KnowledgeBaseTable>;
export type DocumentRow = Selectable<KnowledgeDocumentTable>;
/** A document without its bytes: what views and lists read. */
export type DocumentInfo = Omit<DocumentRow, 'content'>;
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

/** The base, its documents and their chunks: answers whether the base was there. */
export async function deleteBase(db: Executor, tenantId: string, id: string): Promise<boolean> {
  await db.deleteFrom('knowledge_chunks').where('tenant_id', '=', tenantId).where('knowledge_base_id', '=', id).execute();
  await db.deleteFrom('knowledge_documents').where('tenant_id', '=', tenantId).where('knowledge_base_id', '=', id).execute();
  const result = await db.deleteFrom('knowledge_bases').where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows === 1n;
}

// ---------------------------------------------------------------- documents

const INFO_COLUMNS = [
  'id',
  'tenant_id',
  'knowledge_base_id',
  'file_id',
  'filename',
  'title',
  'source_url',
  'tags',
  'metadata',
  'media_type',
  'byte_size',
  'version',
  'indexed_version',
  'status',
  'failure_reason',
  'progress',
  'chunk_count',
  'attempts',
  'available_at',
  'lease_owner',
  'lease_expires_at',
  'created_at',
  'updated_at',
  'indexed_at',
] as const satisfies readonly (keyof DocumentInfo)[];

export async function insertDocument(db: Executor, row: DocumentRow): Promise<void> {
  await db.insertInto('knowledge_documents').values(row).execute();
}

function documentsOf(db: Executor, tenantId: string, baseId: string) {
  return db.selectFrom('knowledge_documents').where('tenant_id', '=', tenantId).where('knowledge_base_id', '=', baseId);
}

export function findDocument(db: Executor, tenantId: string, baseId: string, id: string): Promise<DocumentInfo | undefined> {
  return documentsOf(db, tenantId, baseId).select(INFO_COLUMNS).where('id', '=', id).executeTakeFirst();
}

/** A base's documents, newest first; with `status`, those in it. */
export async function listDocuments(db: Executor, tenantId: string, baseId: string, status: string | undefined, { limit, offset }: Page) {
  let q = documentsOf(db, tenantId, baseId);
  if (status) q = q.where('status', '=', status);
  const [rows, total] = await Promise.all([
    q.select(INFO_COLUMNS).orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    countRows(q),
  ]);
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
  patch: Updateable<KnowledgeDocumentTable>,
): Promise<void> {
  await db.updateTable('knowledge_documents').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
}

/** Deletes the document and its chunks: answers the chunks it had, or null when it was not there. */
export async function deleteDocument(db: Executor, tenantId: string, baseId: string, id: string): Promise<number | null> {
  const row = await db
    .deleteFrom('knowledge_documents')
    .where('tenant_id', '=', tenantId)
    .where('knowledge_base_id', '=', baseId)
    .where('id', '=', id)
    .returning('chunk_count')
    .executeTakeFirst();
  if (!row) return null;
  await db.deleteFrom('knowledge_chunks').where('document_id', '=', id).execute();
  return row.chunk_count;
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

export async function deleteChunks(db: Executor, documentId: string): Promise<void> {
  await db.deleteFrom('knowledge_chunks').where('document_id', '=', documentId).execute();
}

/** Rows per INSERT: 14 parameters each stays well inside both databases' limits. */
const INSERT_BATCH = 500;

/** Chunks written with their embedding's sketch for vector search's first pass (migration 0027). */
export async function insertChunks(db: Executor, dialect: Dialect, rows: NewChunk[]): Promise<void> {
  const sketched = rows.map((r) => {
    const v = vectorOf(r.embedding);
    return dialect === 'postgres'
      ? { ...r, embedding_levels: levelBits(v), embedding_uint8: uint8Sketch(v) }
      : { ...r, embedding_int8: int8Sketch(v) };
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
 * The chunks best matching `words` lexically, best first: FTS5's bm25 over an OR of the words, each
 * quoted (SQLite; the score is bm25 negated, higher better), or ts_rank_cd over websearch_to_tsquery of
 * the words joined by `or` (PostgreSQL). The words are letters and digits only, so no user text
 * reaches either query language as syntax.
 */
export async function lexicalSearch(
  db: Executor,
  dialect: Dialect,
  scope: ChunkScope,
  words: string[],
  limit: number,
): Promise<RankedChunk[]> {
  const documents = scope.documentIds ? sql`and c.document_id in (${sql.join(scope.documentIds)})` : sql``;
  if (dialect === 'postgres') {
    // ts_rank alone weighs every word alike (PostgreSQL keeps no document frequencies), so a word only
    // one document holds ranked no higher than "warranty" in every other: each word's rank is weighted
    // by its inverse document frequency among the base's chunks, as BM25 weighs it (FTS5's ranking).
    // The base's chunk count once (a CTE is computed once), each word's document frequency by the GIN index.
    const counts = await sql<{ word: string; df: string; n: string }>`with base as (
        select count(*) as n from knowledge_chunks c where c.tenant_id = ${scope.tenantId} and c.knowledge_base_id = ${scope.baseId})
      select w.word, base.n,
        (select count(*) from knowledge_chunks c where c.tsv @@ plainto_tsquery('english', w.word)
          and c.tenant_id = ${scope.tenantId} and c.knowledge_base_id = ${scope.baseId}) as df
      from unnest(${words}::text[]) as w(word), base`.execute(db);
    const weighted = counts.rows
      .filter((r) => Number(r.df) > 0)
      .map((r) => ({ word: r.word, idf: Math.log(1 + (Number(r.n) - Number(r.df) + 0.5) / (Number(r.df) + 0.5)) }));
    if (!weighted.length) return [];
    const score = sql.join(
      weighted.map((w) => sql`${w.idf}::float8 * ts_rank(c.tsv, plainto_tsquery('english', ${w.word}), 1)`),
      sql` + `,
    );
    const result = await sql<{ seq: string; score: number }>`select c.seq, (${score}) as score
      from knowledge_chunks c
      where c.tsv @@ websearch_to_tsquery('english', ${weighted.map((w) => w.word).join(' or ')})
        and c.tenant_id = ${scope.tenantId} and c.knowledge_base_id = ${scope.baseId} ${documents}
      order by score desc, c.seq limit ${limit}`.execute(db);
    return result.rows.map((r) => ({ seq: Number(r.seq), score: Number(r.score) }));
  }
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

/** The filter's documents as a condition of a raw statement (none: every document). */
const inDocuments = (scope: ChunkScope) => (scope.documentIds ? sql`and document_id in (${sql.join(scope.documentIds)})` : sql``);

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
 * `agentry export` (export/tenant.ts): the tenant's knowledge bases and documents (their bytes
 * included), a page at a time. Chunks are not exported: they follow from the documents and the base's
 * settings, so an imported document is queued to be indexed again, by whichever replica claims it.
 */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [
    { table: 'knowledge_bases', keys: ['id'], imported: (row) => ({ ...row, chunk_count: 0 }) },
    {
      table: 'knowledge_documents',
      keys: ['id'],
      imported: (row) => ({
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
    },
  ]);
}
