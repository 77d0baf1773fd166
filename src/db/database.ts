import path from 'node:path';
import SQLite from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import {
  Kysely,
  Migrator,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type LogEvent,
  type SqliteDatabase,
  type SqliteStatement,
  sql,
} from 'kysely';
import pg from 'pg';
import { ChangeFeed, ChangeTrackingPlugin } from './changes.js';
import { CheckpointAwareDialect, FALLBACK_AUTOCHECKPOINT_PAGES, startCheckpointer } from './checkpointer.js';
import type { Database } from './schema.js';
import { type MigrationContext, migrationProvider } from './migrations/index.js';
import { preparedStatementName } from './prepared.js';
import { type Reclaimed, reclaimFreePages } from './vacuum.js';
import { WriteHealth } from './write-health.js';
import { createPrivateFile, ensurePrivateDir, tightenFile } from '../private-files.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Db {
  kysely: Kysely<Database>;
  dialect: Dialect;
  /** Where the data lives, for logs: the SQLite file or the PostgreSQL host/database (no password). */
  location: string;
  /** When cached reads are stale (db/changes.ts). */
  changes: ChangeFeed;
  /**
   * SQLite: hands the pages deleted rows freed back to the disk (db/vacuum.ts), waiting out the
   * checkpointer as the server's connection does. Absent on PostgreSQL.
   */
  reclaimFreePages?: () => Promise<Reclaimed>;
  /** Whether writes have been failing on storage faults (disk full, EIO, read-only): /readyz reads it. */
  writeHealth: WriteHealth;
  /**
   * SQLite: `sqlite-vec` when its functions loaded on the connection (knowledge search compares vectors
   * in SQL with them, docs/knowledge.md); absent when it could not load, and on PostgreSQL.
   */
  vectorFunctions?: 'sqlite-vec';
  /** PostgreSQL: the pool's connections (made, idle) and callers waiting for one; the metrics read it. */
  poolStats?: () => { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export interface DbOptions {
  databaseUrl?: string;
  dataDir: string;
  /** Pool size on PostgreSQL. */
  poolSize?: number;
  /** Told of every statement once it ended (Kysely's query log): the traces' database spans (tracing/db.ts). */
  onQuery?: (event: LogEvent) => void;
}

export function openDatabase(options: DbOptions): Db {
  if (options.databaseUrl) {
    // Fail fast when the database is unreachable, so requests answer 503 instead of hanging.
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolSize ?? 10, connectionTimeoutMillis: 5000 });
    // An idle client losing its connection must not crash the process; the next query reports it.
    pool.on('error', () => {});
    // Nor a checked-out one between two statements (in a transaction), where the pool does not listen:
    // PostgreSQL restarting ends every backend at once. Its next statement fails, and the pool drops it.
    pool.on('connect', (client) => client.on('error', () => {}));
    // Other replicas' writes arrive as notifications; until the signal bus listens, nothing is cached.
    const changes = new ChangeFeed(null, false);
    const writeHealth = new WriteHealth();
    const kysely = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: namingTemplates(pool, writeHealth) }),
      plugins: [new ChangeTrackingPlugin(changes)],
      log: options.onQuery,
    });
    const u = new URL(options.databaseUrl);
    return {
      kysely,
      dialect: 'postgres',
      location: `postgres://${u.host}${u.pathname}`,
      changes,
      writeHealth,
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      close: () => kysely.destroy(),
    };
  }
  ensurePrivateDir(options.dataDir);
  const file = path.join(options.dataDir, 'agentry.sqlite');
  // Created 0600 before SQLite opens it: SQLite gives its WAL and shared memory files the database
  // file's mode; those an older version left readable are tightened once they exist.
  createPrivateFile(file);
  const sqlite = new SQLite(file);
  // Takes effect only on a database without tables yet (a new one): retention hands deleted rows'
  // space back through incremental vacuum (db/vacuum.ts); an older file keeps its mode until `agentry vacuum`.
  sqlite.pragma('auto_vacuum = INCREMENTAL');
  // WAL lets the CLI and readers work while the server writes; busy_timeout waits out short locks.
  sqlite.pragma('journal_mode = WAL');
  for (const suffix of ['-wal', '-shm']) tightenFile(`${file}${suffix}`);
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // A page cache of up to 64 MiB (SQLite's default is 2 MiB): a knowledge search reads every chunk of
  // its base, and with 10,000 chunks (40 MB) the default made each read a system call (3x slower).
  sqlite.pragma('cache_size = -65536');
  // Checkpoints run in a worker thread (db/checkpointer.ts); commits here do only as a fallback.
  sqlite.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  // A WAL rewound after a checkpoint is cut back to this size, so a burst does not keep its disk space.
  sqlite.pragma('journal_size_limit = 67108864');
  const vectorFunctions = loadVectorFunctions(sqlite);
  const checkpointer = startCheckpointer(file);
  const changes = new ChangeFeed(externalChanges(sqlite));
  const writeHealth = new WriteHealth();
  const kysely = new Kysely<Database>({
    dialect: new CheckpointAwareDialect({ database: reusingStatements(sqlite, writeHealth) }, checkpointer.writesPaused),
    plugins: [new ChangeTrackingPlugin(changes)],
    log: options.onQuery,
  });
  return {
    kysely,
    dialect: 'sqlite',
    location: file,
    changes,
    writeHealth,
    ...(vectorFunctions ? { vectorFunctions } : {}),
    reclaimFreePages: () => reclaimFreePages(file, { writesPaused: checkpointer.writesPaused }),
    close: async () => {
      await checkpointer.stop();
      await kysely.destroy();
    },
  };
}

/**
 * sqlite-vec's functions (vec_distance_cosine...) on the connection, from the binary its npm package
 * ships for this platform; without one (another platform, a failed install) search compares vectors
 * in process instead, so the server starts either way.
 */
function loadVectorFunctions(sqlite: SQLite.Database): 'sqlite-vec' | undefined {
  try {
    sqliteVec.load(sqlite);
    return 'sqlite-vec';
  } catch {
    return undefined;
  }
}

/**
 * The pool as Kysely sees it: the statements every run writes are compiled once (db/prepared.ts), and
 * are sent here as named statements, so PostgreSQL parses and plans each once per connection instead
 * of on every run. Any other SQL goes as Kysely sends it.
 */
function namingTemplates(pool: pg.Pool, writeHealth: WriteHealth): PostgresPool {
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const named = (client: pg.PoolClient): PostgresPoolClient => ({
    query: ((text: string | object, values?: unknown[]) => {
      if (typeof text !== 'string') return client.query(text as never); // a cursor (Kysely's stream())
      const name = preparedStatementName(text);
      const sent = name ? client.query({ name, text, values }) : client.query(text, values);
      return sent.then(
        (result) => {
          writeHealth.succeeded(text);
          return result;
        },
        (err: unknown) => {
          writeHealth.failed(err);
          throw err;
        },
      );
    }) as unknown as PostgresPoolClient['query'],
    release: () => client.release(),
  });
  return {
    async connect() {
      const client = await pool.connect();
      let wrapped = clients.get(client);
      if (!wrapped) {
        wrapped = named(client);
        clients.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => pool.end(),
  };
}

/** How stale another process's commit may be seen: data_version is read at most this often. */
const EXTERNAL_CHECK_MS = 1;

/**
 * True when another connection (the CLI, another process on the same file) committed since the last
 * look: SQLite's data_version moves only for other connections' commits, so this process's own
 * writes never trigger it (the change-tracking plugin reports those). Reading it starts a read
 * transaction (~10 us here), too much for every cached read, so it is read at most once per
 * EXTERNAL_CHECK_MS: a request that starts later than that after another process's commit sees it.
 */
function externalChanges(sqlite: SQLite.Database): () => boolean {
  const stmt = sqlite.prepare('pragma data_version').pluck();
  let seen = stmt.get() as number;
  let checkedAt = performance.now();
  return () => {
    const t = performance.now();
    if (t - checkedAt < EXTERNAL_CHECK_MS) return false;
    checkedAt = t;
    const version = stmt.get() as number;
    if (version === seen) return false;
    seen = version;
    return true;
  };
}

const STATEMENT_CACHE_SIZE = 1000;

/**
 * The connection as Kysely sees it, reusing prepared statements: Kysely's SQLite driver prepares every
 * query anew, and preparing costs more than running most of our queries (docs/benchmarks.md). Statements
 * are kept per SQL text (parameterised, so the set is small; the oldest goes past the limit). Safe because
 * queries run to completion in `all()`/`run()`; nothing here uses Kysely's `stream()` on SQLite.
 *
 * Each statement also tells `writeHealth` how it went (a storage fault, or a write that succeeded).
 * And a ROLLBACK runs only while a transaction is open: on disk full or an I/O error SQLite rolls the
 * transaction back itself, and Kysely's ROLLBACK after it would fail ("cannot rollback - no
 * transaction is active") and replace the real error, so the caller saw a 500 instead of the fault.
 */
function reusingStatements(sqlite: SQLite.Database, writeHealth: WriteHealth): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  const watched = (source: string, stmt: SQLite.Statement): SqliteStatement => {
    const observe =
      <A extends unknown[], R>(call: (...args: A) => R) =>
      (...args: A): R => {
        try {
          const result = call(...args);
          writeHealth.succeeded(source);
          return result;
        } catch (err) {
          writeHealth.failed(err);
          throw err;
        }
      };
    return {
      reader: stmt.reader,
      all: observe((parameters: ReadonlyArray<unknown>) => stmt.all(parameters as unknown[])),
      run: observe((parameters: ReadonlyArray<unknown>) => stmt.run(parameters as unknown[])),
      iterate: (parameters: ReadonlyArray<unknown>) => stmt.iterate(parameters as unknown[]),
    };
  };
  const rollback = sqlite.prepare('rollback');
  const rollbackIfOpen: SqliteStatement = {
    reader: false,
    all: () => [],
    run: () => (sqlite.inTransaction ? rollback.run() : { changes: 0, lastInsertRowid: 0 }),
    iterate: () => [][Symbol.iterator](),
  };
  return {
    prepare(source: string) {
      if (/^\s*rollback\s*$/i.test(source)) return rollbackIfOpen;
      let stmt = cache.get(source);
      if (!stmt) {
        stmt = watched(source, sqlite.prepare(source));
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
        cache.set(source, stmt);
      }
      return stmt;
    },
    close: () => sqlite.close(),
  };
}

/** Applies every pending migration; safe to call from several processes at once. */
export async function migrate(db: Db, context: MigrationContext = {}): Promise<string[]> {
  // Migrations are independent additions developed side by side; a database that already ran a
  // later-numbered one still takes an earlier-numbered newcomer.
  const migrator = new Migrator({ db: db.kysely, provider: migrationProvider(context), allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db.kysely);
}
