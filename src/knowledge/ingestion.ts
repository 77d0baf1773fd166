import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/database.js';
import { isStorageFault } from '../errors.js';
import { newId, now } from '../ids.js';
import { Dispatcher } from '../scheduler/dispatcher.js';
import { Loop } from '../scheduler/loop.js';
import type { SignalBus } from '../signals/bus.js';
import { DocumentError } from './documents/index.js';
import type { DocumentReader } from './documents/reader.js';
import { type Embedded, type Embedder, EmbeddingError, type Embeddings, vectorBytes } from './embeddings.js';
import type { PgVector } from './pgvector.js';
import { LIMITS } from './schemas.js';
import * as store from './store.js';
import type { KnowledgeUsage } from './usage/service.js';

/**
 * Ingestion (docs/knowledge.md, "Ingestion"): a document's row is its job. Any replica's dispatcher
 * claims queued documents under a lease (and those whose lease lapsed with their process), then
 * extracts, chunks, embeds in batches, and swaps the document's chunks for the new version's in one
 * transaction, so search sees the old version or the new one, never part of one. Every write about a
 * document names the version and lease it holds: a document replaced or deleted meanwhile is left alone.
 */

/** The signal that documents were queued (any replica's dispatcher wakes). */
const INGEST_SIGNAL = 'knowledge.queued';

/** Claims of one document after which it fails: its ingestion kept dying with its process. */
const MAX_CLAIMS = 5;

export interface IngestionOptions {
  db: Db;
  bus: SignalBus;
  embeddings: Embeddings;
  /** Where the tokens a provider embedding spends are recorded. */
  usage: KnowledgeUsage;
  log: FastifyBaseLogger;
  /** Documents ingested at once in this process. */
  workers: number;
  /** Reads documents into chunks off the event loop. */
  reader: DocumentReader;
  leaseMs: number;
  /** Whether chunks are written for pgvector too, and each dimension's index (PostgreSQL with the extension). */
  pgvector: PgVector;
  /** How often to look for work no signal told of (other replicas' while the bus was down, lapsed leases). */
  pollMs: number;
}

/** The document was replaced, deleted, or taken over since it was claimed: nothing of this attempt is written. */
class Superseded extends Error {}

/**
 * Why a document whose chunks the database could not write (disk full, failing or read-only) failed.
 * Not tried again by itself: each try would read and embed the document again (a provider's tokens) to
 * fail the same way until an operator frees space; uploading it again queues it once there is.
 */
const STORAGE_FAULT =
  'the database could not write the document’s chunks (disk full, failing or read-only storage): nothing of it was indexed; upload it again once space is freed';

export class Ingestion {
  /** This process's lease owner. */
  private readonly owner = `knowledge-${newId()}`;
  /**
   * Documents this process is ingesting, with how many ingestions of each (a replaced document's new
   * version can be claimed here while its old one is still winding down): leases renewed while any is.
   */
  private readonly held = new Map<string, number>();
  private readonly dispatcher: Dispatcher<store.DocumentRow>;
  private readonly renewal: Loop;
  private readonly stopping = new AbortController();
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly o: IngestionOptions) {
    this.dispatcher = new Dispatcher({
      workers: o.workers,
      pollMs: o.pollMs,
      claim: (limit) =>
        store.claimDocuments(o.db.kysely, o.db.dialect, { owner: this.owner, now: now(), leaseUntil: this.leaseUntil() }, limit),
      execute: (doc) => this.ingest(doc),
      log: o.log,
    });
    this.renewal = new Loop('knowledge lease renewal', o.leaseMs / 3, () => this.renew(), o.log);
  }

  start() {
    this.unsubscribe = this.o.bus.subscribe(INGEST_SIGNAL, () => this.dispatcher.wake());
    this.dispatcher.start();
    this.renewal.start();
  }

  /** Stops claiming; ingestions under way are abandoned where they stand (their leases lapse, another process takes them). */
  async stop() {
    this.unsubscribe?.();
    this.stopping.abort();
    await this.dispatcher.stop();
    await this.renewal.stop();
    await this.o.reader.close();
  }

  /** Documents were queued: wake this process's dispatcher and every replica's. */
  queued = () => {
    this.dispatcher.wake();
    this.o.bus.publish(INGEST_SIGNAL, {}).catch((err) => this.o.log.warn({ err }, 'could not signal queued knowledge documents'));
  };

  private leaseUntil() {
    // Leases measure whether a process is alive: real time, never the app's clock.
    return new Date(Date.now() + this.o.leaseMs).toISOString();
  }

  private async renew() {
    if (!this.held.size) return;
    await store.renewLeases(this.o.db.kysely, { owner: this.owner, ids: [...this.held.keys()], until: this.leaseUntil() });
  }

  private async ingest(doc: store.DocumentRow): Promise<void> {
    const held: store.HeldDocument = { id: doc.id, version: doc.version, owner: this.owner };
    const db = this.o.db.kysely;
    this.held.set(doc.id, (this.held.get(doc.id) ?? 0) + 1);
    // Tokens the provider reported for this attempt's batches (null: no provider was called).
    let spent = null as { model: string; tokens: number } | null;
    try {
      if (doc.attempts > MAX_CLAIMS) throw new DocumentError('malformed_document', `its ingestion was interrupted ${MAX_CLAIMS} times`);
      const base = await store.findBase(db, doc.tenant_id, doc.knowledge_base_id);
      if (!base) return;
      const content = await store.documentContent(db, doc.id, doc.version);
      if (!content) throw new Superseded();
      const { title, chunks } = await this.o.reader.read({
        input: { bytes: content, mediaType: doc.media_type, filename: doc.filename ?? undefined },
        limits: { maxTextChars: LIMITS.documentTextChars, maxUnpackedBytes: 64 * 1024 * 1024, maxPages: 2000 },
        chunking: { maxChars: base.chunk_max_chars, overlapChars: base.chunk_overlap_chars },
      });
      if (!chunks.length) throw new DocumentError('no_text', 'the document holds no text');
      if (chunks.length > LIMITS.chunksPerDocument) {
        throw new DocumentError('document_too_large', `the document makes ${chunks.length} chunks, more than ${LIMITS.chunksPerDocument}`);
      }
      await this.progress(held, 10);
      const embedder = this.o.embeddings.embedder(base.embedding_model);
      const vectors: Float32Array[] = [];
      for (let i = 0; i < chunks.length; i += embedder.batchSize) {
        const batch = chunks.slice(i, i + embedder.batchSize).map((c) => c.text);
        const embedded = await this.embed(embedder, batch);
        if (embedded.tokens !== null) spent = { model: embedder.model, tokens: (spent?.tokens ?? 0) + embedded.tokens };
        vectors.push(...embedded.vectors);
        // The built-in embedding is CPU in this thread: a turn of the event loop between batches keeps runs' I/O going.
        await new Promise((resolve) => setImmediate(resolve));
        if (i + embedder.batchSize < chunks.length) await this.progress(held, 10 + Math.floor((80 * vectors.length) / chunks.length));
      }
      const at = now();
      const rows: store.NewChunk[] = chunks.map((c, i) => ({
        tenant_id: doc.tenant_id,
        knowledge_base_id: doc.knowledge_base_id,
        document_id: doc.id,
        version: doc.version,
        position: c.position,
        heading_path: JSON.stringify(c.headingPath),
        text: c.text,
        char_count: c.text.length,
        // An estimate (four characters a token), for sizing what a passage costs a model.
        token_count: Math.ceil(c.text.length / 4),
        embedding_model: embedder.model,
        embedding: vectorBytes(vectors[i]),
      }));
      const pgvector = await this.o.pgvector.enabled();
      if (pgvector && vectors.length) await this.o.pgvector.indexFor(vectors[0].length);
      await db.transaction().execute(async (trx) => {
        const ready = await store.updateHeld(trx, held, {
          status: 'ready',
          indexed_version: doc.version,
          progress: 100,
          chunk_count: rows.length,
          failure_reason: null,
          title: doc.title ?? title,
          lease_owner: null,
          lease_expires_at: null,
          updated_at: at,
          indexed_at: at,
        });
        if (!ready) throw new Superseded();
        const dialect = this.o.db.dialect;
        const removed = await store.deleteChunks(trx, dialect, doc.id);
        await store.insertChunks(trx, dialect, rows, pgvector);
        // PostgreSQL's document frequencies move with the chunks, in this transaction (store.addToTermCounts);
        // before the base's row, which uploads to the base wait for: it is held only until the commit.
        if (dialect === 'postgres') {
          await store.addToTermCounts(trx, doc.knowledge_base_id, await store.documentTermCounts(trx, doc.id), removed);
        }
        await store.addToBaseCounts(trx, doc.knowledge_base_id, { documents: 0, chunks: rows.length - doc.chunk_count });
      });
    } catch (err) {
      if (err instanceof Superseded || this.stopping.signal.aborted) return;
      const reason =
        err instanceof DocumentError || err instanceof EmbeddingError
          ? err.message
          : isStorageFault(err)
            ? STORAGE_FAULT
            : 'the document could not be indexed (an internal error; see the server log)';
      if (isStorageFault(err)) this.o.log.error({ err, documentId: doc.id }, 'knowledge ingestion failed: the database could not write');
      else if (!(err instanceof DocumentError || err instanceof EmbeddingError))
        this.o.log.error({ err, documentId: doc.id }, 'knowledge ingestion failed');
      await store
        .updateHeld(db, held, { status: 'failed', failure_reason: reason, lease_owner: null, lease_expires_at: null, updated_at: now() })
        .catch((e) => this.o.log.error({ err: e, documentId: doc.id }, 'could not record a knowledge document’s failure'));
    } finally {
      // Spent whether the document was indexed or not.
      if (spent) {
        await this.o.usage.record({
          tenantId: doc.tenant_id,
          knowledgeBaseId: doc.knowledge_base_id,
          documentId: doc.id,
          kind: 'ingestion',
          model: spent.model,
          inputTokens: spent.tokens,
          outputTokens: 0,
        });
      }
      const left = (this.held.get(doc.id) ?? 1) - 1;
      if (left > 0) this.held.set(doc.id, left);
      else this.held.delete(doc.id);
    }
  }

  private async progress(held: store.HeldDocument, percent: number) {
    if (!(await store.updateHeld(this.o.db.kysely, held, { progress: percent }))) throw new Superseded();
  }

  /**
   * One batch embedded; a call that timed out or was refused for now (429, 5xx) is tried again after
   * an exponential wait, up to its provider's attempts (MODEL_RETRY_*), then fails the document.
   */
  private async embed(embedder: Embedder, texts: string[]): Promise<Embedded> {
    const { maxAttempts, baseMs, maxDelayMs } = embedder.retry;
    for (let attempt = 1; ; attempt++) {
      try {
        return await embedder.embed(texts, this.stopping.signal);
      } catch (err) {
        if (!(err instanceof EmbeddingError) || !err.retryable) throw err;
        if (attempt >= maxAttempts) throw new EmbeddingError(`${err.message} (${attempt} attempts)`, false);
        await sleep(Math.min(maxDelayMs, baseMs * 2 ** (attempt - 1)), this.stopping.signal);
      }
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
