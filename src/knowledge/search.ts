import pLimit, { type LimitFunction } from 'p-limit';
import type { Db } from '../db/database.js';
import { InvalidInput, RunFailed, Unavailable } from '../errors.js';
import { headingPathColumn, metadataColumn, tagsColumn } from './columns.js';
import {
  dot,
  EmbeddingError,
  type Embeddings,
  int8Sketch,
  levelMasks,
  STOP_WORDS,
  sparseWeights,
  vectorBytes,
  vectorOf,
  wordsOf,
} from './embeddings.js';
import type { PgVector } from './pgvector.js';
import type { KnowledgeService } from './service.js';
import { RERANK_TIMEOUT_MS, RerankFailed, type RerankModels, rerankOrder } from './rerank.js';
import { type Passage, RERANK_CANDIDATES, type SearchFilters, type SearchFusion, type SearchMode, type SearchResult } from './schemas.js';
import * as store from './store.js';
import type { KnowledgeUsage } from './usage/service.js';

/**
 * Search of one knowledge base (docs/knowledge.md, "How ranking works"): lexical (FTS5 bm25 on SQLite,
 * idf-weighted ts_rank on PostgreSQL, over a bounded set of candidates), vector (cosine: a first pass over
 * the vectors' sketches, or pgvector's HNSW index where PostgreSQL has it, then the candidates' exact
 * cosine), or both fused by relative score (default) or reciprocal rank. Filters
 * narrow the documents first. A base with a `rerankModel` has the best candidates re-ordered by that
 * model before the top k are cut.
 */

/** Reciprocal-rank fusion's constant (Cormack et al.): a passage's fused score is the sum of 1 / (60 + rank). */
const RRF_K = 60;
/** Words of a query searched for at most. */
const MAX_QUERY_WORDS = 32;
/**
 * Chunks PostgreSQL's lexical search ranks at most, picked by a first pass when the query's words are
 * held by more (store.rankWeighted; docs/knowledge.md, "The bound"). Chosen by measurement at 100,000
 * chunks: 5,000 kept 99 % of the unbounded top 5 of the bench's questions, in a sixth of the time.
 */
const LEXICAL_CANDIDATES = 5000;
/** Vectors read per page of the exact search. */
const VECTOR_PAGE = 2000;
/** Candidates of vector search's first pass (sketches) per vector asked for, ranked again exactly. */
const FIRST_PASS_FACTOR = 10;
/** A query with at most this many non-zero components is weighed by them alone on PostgreSQL (get_byte each). */
const SPARSE_QUERY_COMPONENTS = 64;
const SNIPPET_CHARS = 240;

export interface SearchRequest {
  query: string;
  k?: number;
  mode?: SearchMode;
  fusion?: SearchFusion;
  filters?: SearchFilters;
  /** Every vector compared, without the first pass. */
  exact?: boolean;
  /** Re-rank with the base's rerankModel: default when it has one; true without one is refused. */
  rerank?: boolean;
}

type Comparison =
  | { index: 'sqlite-vec' | 'pgvector' | 'level-bits' | 'exact' }
  | { index: 'int8'; weights: { dimension: number; weight: number }[] };

/** Searches ranked at once in this process, and how many may wait for their turn (docs/knowledge.md, "Sizes and limits"). */
export interface SearchLimits {
  concurrency: number;
  queue: number;
  /** How long a re-ranking model may take before the search answers in the fused order (default 30 s). */
  rerankTimeoutMs?: number;
}

/** Who a search's tokens are spent for: the run whose knowledge_search asked it. */
export interface SearchContext {
  runId?: string;
}

type Chunk = Awaited<ReturnType<typeof store.chunksBySeq>>[number];

export class KnowledgeSearch {
  private readonly ranking: LimitFunction;

  constructor(
    private readonly db: Db,
    private readonly knowledge: KnowledgeService,
    private readonly embeddings: Embeddings,
    private readonly models: RerankModels,
    private readonly usage: KnowledgeUsage,
    private readonly pgvector: PgVector,
    private readonly limits: SearchLimits = { concurrency: 4, queue: 64 },
  ) {
    this.ranking = pLimit(limits.concurrency);
  }

  async search(tenantId: string, baseId: string, request: SearchRequest, context: SearchContext = {}): Promise<SearchResult> {
    const base = await this.knowledge.base(tenantId, baseId);
    const k = request.k ?? 5;
    const mode = request.mode ?? 'hybrid';
    const fusion = mode === 'hybrid' ? (request.fusion ?? 'relative_score') : null;
    if (request.rerank && !base.rerank_model) {
      throw new InvalidInput('rerank needs a knowledge base with a rerankModel', [
        { path: 'body.rerank', message: 'the knowledge base has no rerankModel' },
      ]);
    }
    const rerankModel = request.rerank === false ? null : base.rerank_model;
    const words = queryWords(request.query);
    // Embedded before the ranking's turn: a slow embedding provider holds no place of the database's.
    const spent = { tenantId, knowledgeBaseId: baseId, runId: context.runId };
    const queryVector = mode !== 'lexical' ? await this.embedQuery(base.embedding_model, request.query, spent) : null;
    const pgvector = queryVector && !request.exact ? await this.pgvector.enabled() : false;
    const comparison = queryVector ? this.comparison(queryVector, request.exact ?? false, pgvector) : null;
    const result = { mode, fusion, vectorIndex: comparison?.index ?? ('none' as const), rerank: null };
    const ranked = await this.inTurn(async () => {
      const documentIds = await this.filtered(tenantId, baseId, request.filters);
      if (documentIds?.length === 0) return [];
      const scope: store.ChunkScope = { tenantId, baseId, documentIds };
      // Each ranker brings more candidates than asked for, so fusion has rankings to combine.
      const pool = Math.max(k * 4, 40);
      const lexical = mode !== 'vector' && words.length ? await this.lexicalSearch(scope, words, pool) : [];
      const vector = queryVector && comparison ? await this.vectorSearch(scope, base.embedding_model, queryVector, comparison, pool) : [];
      const fuse = fusion === 'rrf' ? fuseRanks : fuseScores;
      return mode === 'lexical' ? lexical : mode === 'vector' ? vector : fuse([lexical, vector]);
    });
    if (!rerankModel || !ranked.length) return { ...result, passages: await this.passages(tenantId, ranked.slice(0, k), words) };
    const candidates = ranked.slice(0, RERANK_CANDIDATES);
    const chunks = await this.chunks(tenantId, candidates);
    const shown = candidates.filter((c) => chunks.has(c.seq));
    let order: store.RankedChunk[];
    let rerank: SearchResult['rerank'];
    // Outside the ranking's turn: a model that is slow or silent holds no place of the database's.
    try {
      const { order: picked, usage } = await rerankOrder(
        this.models.resolve(rerankModel),
        request.query,
        shown.map((c) => chunks.get(c.seq)!.text),
        this.limits.rerankTimeoutMs ?? RERANK_TIMEOUT_MS,
      );
      await this.usage.record({ ...spent, kind: 'rerank', model: rerankModel, ...usage });
      order = [...picked.map((i) => shown[i]), ...ranked.filter((c) => !picked.some((i) => shown[i] === c))];
      rerank = { model: rerankModel, status: 'reranked', candidates: shown.length, error: null };
    } catch (err) {
      if (!(err instanceof RerankFailed)) throw err;
      if (err.usage) await this.usage.record({ ...spent, kind: 'rerank', model: rerankModel, ...err.usage });
      order = ranked;
      rerank = { model: rerankModel, status: 'failed', candidates: shown.length, error: err.message };
    }
    // Scores follow the new order (best 1, then evenly down), so several bases' passages still merge by score.
    const top = order.slice(0, k).map((c, i) => ({ seq: c.seq, score: (order.length - i) / order.length }));
    return { ...result, rerank, passages: await this.passages(tenantId, top, words, chunks) };
  }

  /** The chunks of `ranked`, by seq (those swapped out since the ranking are missing). */
  private async chunks(tenantId: string, ranked: store.RankedChunk[]): Promise<Map<number, Chunk>> {
    if (!ranked.length) return new Map();
    const rows = await store.chunksBySeq(
      this.db.kysely,
      tenantId,
      ranked.map((r) => r.seq),
    );
    return new Map(rows.map((c) => [c.seq, c]));
  }

  /**
   * The chunks best matching the words: FTS5's bm25 on SQLite; on PostgreSQL the words weighed by their
   * frequencies, then at most LEXICAL_CANDIDATES chunks ranked.
   */
  private async lexicalSearch(scope: store.ChunkScope, words: string[], limit: number): Promise<store.RankedChunk[]> {
    const db = this.db.kysely;
    if (this.db.dialect !== 'postgres') return store.lexicalSearch(db, scope, words, limit);
    const weighted = await store.weighWords(db, scope.baseId, words);
    return weighted.length ? store.rankWeighted(db, scope, weighted, limit, LEXICAL_CANDIDATES) : [];
  }

  /** The documents the filters leave (undefined: no filters, every document). */
  private async filtered(tenantId: string, baseId: string, filters: SearchFilters | undefined): Promise<string[] | undefined> {
    if (!filters || (!filters.tags?.length && !filters.documentIds && !filters.metadata)) return undefined;
    const docs = await store.searchableDocuments(this.db.kysely, tenantId, baseId);
    const wanted = filters.documentIds && new Set(filters.documentIds);
    const metadata = Object.entries(filters.metadata ?? {});
    return docs
      .filter((d) => {
        if (wanted && !wanted.has(d.id)) return false;
        if (filters.tags?.length && !tagsColumn(d.tags).some((t) => filters.tags!.includes(t))) return false;
        if (metadata.length) {
          const own = metadataColumn(d.metadata);
          if (!metadata.every(([key, value]) => Object.hasOwn(own, key) && own[key] === value)) return false;
        }
        return true;
      })
      .map((d) => d.id);
  }

  /**
   * Runs a search's ranking in its turn: at most `concurrency` at once in this process, so searches
   * (each several statements over a whole base) leave the database's connections to everything else;
   * past `queue` waiting, a search is refused (503 search_busy) rather than queued without end.
   */
  private inTurn<T>(ranking: () => Promise<T>): Promise<T> {
    if (this.ranking.activeCount >= this.limits.concurrency && this.ranking.pendingCount >= this.limits.queue) {
      throw new Unavailable('search_busy', `${this.ranking.pendingCount} knowledge searches are waiting on this server; retry shortly`, 1);
    }
    return this.ranking(ranking);
  }

  /** The query's vector by the base's model (all zeros for a query without words). */
  private async embedQuery(
    model: string,
    query: string,
    spent: { tenantId: string; knowledgeBaseId: string; runId?: string },
  ): Promise<Float32Array> {
    try {
      const { vectors, tokens } = await this.embeddings.embedder(model).embed([query], AbortSignal.timeout(60_000));
      if (tokens !== null) await this.usage.record({ ...spent, kind: 'query', model, inputTokens: tokens, outputTokens: 0 });
      return vectors[0];
    } catch (err) {
      if (err instanceof EmbeddingError) throw new RunFailed('embedding_failed', `the query could not be embedded: ${err.message}`);
      throw err;
    }
  }

  /**
   * How this query's vector is compared (docs/knowledge.md, "Vector"): with sqlite-vec, by int8
   * sketches; on PostgreSQL with pgvector, by its HNSW index (up to its 2,000 dimensions); else on
   * PostgreSQL, a word-sparse query by the int8 sketches at its own components, a dense one by level
   * bits; else, or asked for, with every vector.
   */
  private comparison(q: Float32Array, exact: boolean, pgvector: boolean): Comparison {
    if (exact || (this.db.dialect === 'sqlite' && this.db.vectorFunctions !== 'sqlite-vec')) return { index: 'exact' };
    if (this.db.dialect === 'sqlite') return { index: 'sqlite-vec' };
    if (pgvector && store.indexable(q.length)) return { index: 'pgvector' };
    const weights = sparseWeights(q, SPARSE_QUERY_COMPONENTS);
    return weights ? { index: 'int8', weights } : { index: 'level-bits' };
  }

  /**
   * The nearest vectors by cosine. A first pass over small sketches picks FIRST_PASS_FACTOR times as
   * many candidates, which are ranked by their exact cosine; `exact` compares every vector here, a
   * page at a time.
   */
  private async vectorSearch(
    scope: store.ChunkScope,
    model: string,
    q: Float32Array,
    comparison: Comparison,
    limit: number,
  ): Promise<store.RankedChunk[]> {
    // A query without words has no direction to compare: no vector ranking (lexical has none either).
    if (q.every((x) => x === 0)) return [];
    const candidates = limit * FIRST_PASS_FACTOR;
    const kysely = this.db.kysely;
    if (comparison.index === 'sqlite-vec') {
      return store.nearestVectors(kysely, scope, model, { embedding: vectorBytes(q), sketch: int8Sketch(q) }, candidates, limit);
    }
    const best = new Best(limit);
    if (comparison.index === 'pgvector') {
      // HNSW's filtered scan stops at hnsw.max_scan_tuples: a base (or filter) with few chunks among the
      // index's may come up short, and then its chunks are compared exactly, so a search finds `limit` when there are.
      let rows = await store.pgvectorNearest(kysely, scope, model, q, limit);
      if (rows.length < limit) rows = await store.pgvectorExact(kysely, scope, model, q, limit);
      for (const row of rows) best.offer(row.seq, dot(q, vectorOf(row.embedding)));
      return best.ranked;
    }
    if (comparison.index !== 'exact') {
      const rows =
        comparison.index === 'int8'
          ? await store.sparseVectorCandidates(kysely, scope, model, comparison.weights, candidates)
          : await store.vectorCandidates(kysely, scope, model, levelMasks(q), candidates);
      for (const row of rows) best.offer(row.seq, dot(q, vectorOf(row.embedding)));
      return best.ranked;
    }
    for (let after = 0; ; ) {
      const page = await store.vectorPage(kysely, scope, model, after, VECTOR_PAGE);
      for (const row of page) best.offer(row.seq, dot(q, vectorOf(row.embedding)));
      if (page.length < VECTOR_PAGE) return best.ranked;
      after = page[page.length - 1].seq;
    }
  }

  private async passages(tenantId: string, ranked: store.RankedChunk[], words: string[], read?: Map<number, Chunk>): Promise<Passage[]> {
    if (!ranked.length) return [];
    const chunks = new Map(read);
    const unread = ranked.filter((r) => !chunks.has(r.seq));
    for (const [seq, chunk] of await this.chunks(tenantId, unread)) chunks.set(seq, chunk);
    const documentIds = [...new Set([...chunks.values()].map((c) => c.document_id))];
    const documents = new Map((await store.documentTitles(this.db.kysely, tenantId, documentIds)).map((d) => [d.id, d]));
    const passages: Passage[] = [];
    for (const { seq, score } of ranked) {
      const chunk = chunks.get(seq);
      // A chunk swapped out (its document replaced or deleted) between the ranking and this read.
      if (!chunk) continue;
      const doc = documents.get(chunk.document_id);
      passages.push({
        text: chunk.text,
        citation: {
          knowledgeBaseId: chunk.knowledge_base_id,
          documentId: chunk.document_id,
          title: doc?.title ?? null,
          sourceUrl: doc?.source_url ?? null,
          position: chunk.position,
          headingPath: headingPathColumn(chunk.heading_path),
          score,
          snippet: snippetOf(chunk.text, words),
        },
      });
    }
    return passages;
  }
}

/** The `limit` best-scored chunks offered, best first (ties: the first offered first). */
class Best {
  readonly ranked: store.RankedChunk[] = [];
  constructor(private readonly limit: number) {}

  offer(seq: number, score: number) {
    const best = this.ranked;
    if (best.length === this.limit && score <= best[this.limit - 1].score) return;
    let i = best.length;
    while (i > 0 && best[i - 1].score < score) i--;
    best.splice(i, 0, { seq, score });
    if (best.length > this.limit) best.pop();
  }
}

/** Reciprocal-rank fusion: each ranking adds 1 / (RRF_K + rank) to a passage, rank from 1; best first, then by seq. */
function fuseRanks(rankings: store.RankedChunk[][]): store.RankedChunk[] {
  return fused(rankings, () => (_r, i) => 1 / (RRF_K + i + 1));
}

/**
 * Relative-score fusion (Weaviate's default; a convex combination of min-max normalised scores, which
 * Bruch et al. 2023 found better than RRF): each ranking's scores scaled to 0..1 over its own
 * candidates, weighted alike and added, so a wide lead in one ranking (a rare term) keeps its weight
 * where ranks would flatten it. An empty ranking adds nothing; a ranking of equal scores gives each 1.
 */
function fuseScores(rankings: store.RankedChunk[][]): store.RankedChunk[] {
  return fused(rankings, (ranking) => {
    const max = ranking[0]?.score ?? 0;
    const min = ranking[ranking.length - 1]?.score ?? 0;
    return (r) => (max === min ? 1 : (r.score - min) / (max - min)) / rankings.length;
  });
}

/** Each ranking's contribution summed per passage (`contribution` made once per ranking); best first, then by seq. */
function fused(
  rankings: store.RankedChunk[][],
  contribution: (ranking: store.RankedChunk[]) => (r: store.RankedChunk, index: number) => number,
): store.RankedChunk[] {
  const scores = new Map<number, number>();
  for (const ranking of rankings) {
    const of = contribution(ranking);
    for (const [i, r] of ranking.entries()) scores.set(r.seq, (scores.get(r.seq) ?? 0) + of(r, i));
  }
  return [...scores].map(([seq, score]) => ({ seq, score })).sort((a, b) => b.score - a.score || a.seq - b.seq);
}

/**
 * The words a query is searched for: its own, once each, without English function words unless it has
 * nothing else ("to be or not to be"). Their ranking weight was small already (every chunk holds them);
 * their cost was not: "what is the warranty" made the lexical search score every chunk holding "the".
 */
function queryWords(query: string): string[] {
  const words = [...new Set(wordsOf(query))];
  const content = words.filter((w) => !STOP_WORDS.has(w));
  return (content.length ? content : words).slice(0, MAX_QUERY_WORDS);
}

/** Up to SNIPPET_CHARS of the text around the first query word it holds (its start when none). */
function snippetOf(text: string, words: string[]): string {
  if (text.length <= SNIPPET_CHARS) return text;
  const lower = text.toLowerCase();
  const at = words.map((w) => lower.indexOf(w)).filter((i) => i >= 0);
  const hit = at.length ? Math.min(...at) : 0;
  const start = Math.max(0, Math.min(hit - SNIPPET_CHARS / 4, text.length - SNIPPET_CHARS));
  const end = start + SNIPPET_CHARS;
  return `${start > 0 ? '…' : ''}${text.slice(start, end).trim()}${end < text.length ? '…' : ''}`;
}
