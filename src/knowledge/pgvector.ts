import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { vectorOf } from './embeddings.js';
import * as store from './store.js';

/** The built-in embedding's dimensions (embeddings.ts): its index, made last, is what `enabled` reads. */
const BUILTIN_DIMENSIONS = 384;
/** Chunks given their `vector` per statement by the upkeep's backfill. */
const BACKFILL_BATCH = 1000;
/**
 * How long a process keeps "no pgvector" before asking again: another replica's upkeep (or an
 * extension created by hand, then a restart of any replica) is taken up here within this time.
 */
const RECHECK_MS = 60_000;

/** What one upkeep did, for its log line. */
interface UpkeepResult {
  /** Whether pgvector was not searched before (no built-in index): taken up now. */
  tookUp: boolean;
  /** Chunks given their `vector`. */
  filled: number;
  /** The dimensions whose HNSW index it made sure of. */
  indexes: number[];
}

/**
 * Whether this PostgreSQL searches vectors through pgvector (docs/knowledge.md, "Vector"), and the
 * upkeep that makes it so wherever the extension is available: started in the background when the
 * server listens, it takes up an extension installed after an earlier start, and gives chunks an older
 * server wrote (a rolling upgrade) their `vector`. Each dimension's HNSW index is made once, before the
 * first chunks of that dimension are written.
 */
export class PgVector {
  private column: { ready: Promise<boolean>; askedAt: number } | undefined;
  private readonly indexes = new Map<number, Promise<void>>();
  private upkeep: Promise<void> | undefined;
  private stopping = false;

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
  ) {}

  /**
   * True on a PostgreSQL whose chunks keep pgvector's copy of their embeddings. A yes is kept for the
   * process; a no is asked again after RECHECK_MS (and at once when this process's upkeep ends).
   */
  enabled(): Promise<boolean> {
    if (this.db.dialect !== 'postgres') return Promise.resolve(false);
    const cached = this.column;
    if (cached && performance.now() - cached.askedAt < RECHECK_MS) return cached.ready;
    const asked = {
      askedAt: performance.now(),
      ready: store.hasVectorColumn(this.db.kysely).then(
        (ready) => {
          // A yes stays: the column and its index are not taken away while the server runs.
          if (ready && this.column === asked) asked.askedAt = Number.POSITIVE_INFINITY;
          return ready;
        },
        (err: unknown) => {
          // A database unreachable for the moment is asked again next time, not taken as no pgvector.
          if (this.column === asked) this.column = undefined;
          throw err;
        },
      ),
    };
    this.column = asked;
    return asked.ready;
  }

  /** Makes sure the HNSW index of `dims` dimensions exists (a dimension beyond HNSW's has none: its search keeps the sketches). */
  async indexFor(dims: number): Promise<void> {
    if (!store.indexable(dims)) return;
    let made = this.indexes.get(dims);
    if (!made) {
      made = store.createVectorIndex(this.db.kysely, dims).catch((err: unknown) => {
        this.indexes.delete(dims);
        throw err;
      });
      this.indexes.set(dims, made);
    }
    await made;
  }

  /** Starts the upkeep in the background on PostgreSQL (once): the server does not wait for it. */
  start(): void {
    if (this.db.dialect !== 'postgres' || this.upkeep) return;
    this.upkeep = this.db.kysely
      // One connection for the whole upkeep: its session holds the advisory lock.
      .connection()
      .execute(async (conn) => {
        if (!(await store.tryLockVectorUpkeep(conn))) {
          this.log.debug('pgvector upkeep: another replica runs it');
          return;
        }
        try {
          const done = await takeUpPgvector(conn, this.log, () => this.stopping);
          if (done?.tookUp || done?.filled) {
            this.log.info(
              { chunks: done.filled, indexes: done.indexes },
              'pgvector upkeep: the chunks have their vectors and HNSW indexes',
            );
          }
        } finally {
          await store.unlockVectorUpkeep(conn);
        }
      })
      .catch((err: unknown) => {
        if (!this.stopping) this.log.warn({ err }, 'pgvector upkeep failed: vector search keeps what it had; the next start tries again');
      })
      .finally(() => {
        // This process searches through pgvector from now on if the upkeep made it possible.
        if (this.column?.askedAt !== Number.POSITIVE_INFINITY) this.column = undefined;
      });
  }

  /** Lets a running upkeep end after its current step (the next start goes on with it), and waits for it. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.upkeep;
  }
}

/**
 * pgvector's upkeep, idempotent (docs/knowledge.md, "Vector"): where the `vector` extension is
 * available it is created if this role may, the chunks get their `vector` column, those without a
 * vector get one (up to HNSW's 2,000 dimensions), and each dimension present gets its HNSW index, the
 * built-in embedding's last: it is what `enabled` reads, so search takes the pgvector path only once
 * the vectors are there. Then chunks written meanwhile without a vector get theirs. Nothing where the
 * extension is not available; undefined when it did nothing (no extension, or stopped).
 */
async function takeUpPgvector(db: Kysely<Database>, log: FastifyBaseLogger, stopping: () => boolean): Promise<UpkeepResult | undefined> {
  const extension = await store.vectorExtension(db);
  if (!extension.available) {
    log.debug('pgvector upkeep: the extension is not available here, vector search keeps its sketches');
    return undefined;
  }
  if (!extension.created) {
    try {
      await store.createVectorExtension(db);
    } catch (err) {
      log.info(
        { reason: err instanceof Error ? err.message : String(err) },
        'pgvector is available but this database role may not create it: vector search keeps its sketches (create the extension, then restart)',
      );
      return undefined;
    }
  }
  // The built-in index says an upkeep finished: the column is there, and each dimension's index was made.
  // Until then the column is added (ALTER TABLE locks the table even when it has it) and every dimension read.
  const finished = await store.hasVectorColumn(db);
  if (!finished) await store.addVectorColumn(db);
  await store.createWithoutVectorIndex(db);
  const dimensions = new Set(finished ? [] : await store.vectorDimensions(db));
  const fill = async () => {
    let filled = 0;
    for (let after = 0; !stopping(); ) {
      const rows = await store.chunksWithoutVector(db, after, BACKFILL_BATCH);
      if (!rows.length) break;
      const vectors = rows.map((r) => ({ seq: r.seq, vector: vectorOf(r.embedding) }));
      await store.setVectors(db, vectors);
      for (const v of vectors) dimensions.add(v.vector.length);
      filled += vectors.length;
      after = rows[rows.length - 1].seq;
    }
    return filled;
  };
  const indexDimensions = async () => {
    for (const dims of [...dimensions].sort((a, b) => a - b)) {
      if (stopping()) return;
      if (dims !== BUILTIN_DIMENSIONS) await store.createVectorIndex(db, dims);
    }
  };
  let filled = await fill();
  await indexDimensions();
  if (stopping()) return undefined;
  // Made if not exists, but that still waits for a lock on the table's writes: only until it is there.
  if (!finished) await store.createVectorIndex(db, BUILTIN_DIMENSIONS);
  // Chunks written without a vector while the above ran (their server asked before the index was there),
  // and the index of a dimension first among them (made again if not exists: a no-op for the others).
  filled += await fill();
  await indexDimensions();
  dimensions.add(BUILTIN_DIMENSIONS);
  return { tookUp: !finished, filled, indexes: [...dimensions].sort((a, b) => a - b) };
}
