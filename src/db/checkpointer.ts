import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { CompiledQuery, type DatabaseConnection, type Driver, SqliteDialect, type SqliteDialectConfig, SqliteDriver } from 'kysely';

/**
 * SQLite's WAL checkpoints, off the event loop. By default the connection that commits past
 * `wal_autocheckpoint` pages copies the WAL back into the database file and syncs it, inside that
 * commit: on this project's write-heavy paths (every run, every task) that was a third of the cost of a
 * commit (106 -> 72 µs measured on SQLite). A worker thread
 * with its own connection runs a PASSIVE checkpoint (it never blocks writers or readers) every
 * `intervalMs`, and when the WAL has grown past RESTART_PAGES anyway, a RESTART one that makes writers
 * wait for the rest (little, as the passive one has just copied most), so that the next write rewinds
 * the WAL: without it, steady writes grew the WAL by 14 MB/s. The server's connection keeps a much
 * higher automatic threshold only as a fallback should the worker stop.
 *
 * A RESTART holds the write lock while it copies the frames written since the passive pass began:
 * after a pass of 15-25 ms under load, 200-400 frames and 3-6 ms. So before it the worker runs more
 * passive passes, each copying what was written during the one before, until one finds at most
 * CATCH_UP_FRAMES new (at most CATCH_UP_PASSES): the RESTART is then left a few frames, and writers
 * are held 0.1-2 ms at the median instead of 3-6.
 *
 * A server write meeting the RESTART would sleep in SQLite's busy handler (1, then 2, then 5
 * ms: statements of 3.3 and 8.4 ms, the whole event loop asleep). So the worker raises a shared flag
 * for its duration, and the server's connection (CheckpointAwareDialect) holds its statements back
 * until it drops, asynchronously, while the event loop goes on serving requests. A statement that
 * checked the flag just before it rose still meets the lock, and waits as before.
 */

/** WAL pages (4 KiB) past which the worker's checkpoint waits for writers to finish the job. */
const RESTART_PAGES = 2_000;

/** A passive pass that found at most this many new frames leaves the RESTART little to copy. */
const CATCH_UP_FRAMES = 64;
/** Passive passes at most before a RESTART, after the first. */
const CATCH_UP_PASSES = 4;

/** Pages after which a commit on the main connection checkpoints by itself: the fallback. */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 20_000;

// CommonJS, as eval'd workers are: the better-sqlite3 module's path comes in workerData.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 1000');
db.pragma('synchronous = NORMAL');
const paused = new Int32Array(workerData.paused);
const checkpoint = () => {
  try {
    let [r] = db.pragma('wal_checkpoint(PASSIVE)');
    // Under steady writes a passive checkpoint never catches up with the end of the WAL, and the WAL
    // is rewound only after one did: past restartPages, writers wait for the rest. The rest is first
    // made short: each further pass copies the frames written during the one before (r.log is the end
    // of the WAL as a pass began).
    if (r && r.log > workerData.restartPages) {
      for (let i = 0; i < workerData.catchUpPasses; i++) {
        const before = r.log;
        [r] = db.pragma('wal_checkpoint(PASSIVE)');
        if (r.log - before <= workerData.catchUpFrames) break;
      }
      // The server's writers are told first and hold their writes until told again, rather than
      // meeting the lock and sleeping in SQLite's busy handler (1 ms, then 2, then 5...) with the
      // whole event loop.
      Atomics.store(paused, 0, 1);
      try {
        db.pragma('wal_checkpoint(RESTART)');
      } finally {
        Atomics.store(paused, 0, 0);
        parentPort.postMessage('resumed');
      }
    }
  } catch {
    // Best effort: a checkpoint refused (the database busy past the timeout) is tried again at the next
    // tick, and the server's own checkpoints past the fallback threshold still bound the WAL.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.postMessage('closed');
});
`;

export interface Checkpointer {
  stop(): Promise<void>;
  /**
   * While a checkpoint that blocks writers is under way: a promise that settles when it has ended.
   * Otherwise undefined. Writers that wait for it do not sleep in SQLite's busy handler.
   */
  writesPaused(): Promise<void> | undefined;
}

export interface CheckpointerOptions {
  /** How often the passive checkpoint runs. */
  intervalMs?: number;
  /** WAL pages past which a RESTART checkpoint rewinds the WAL (writers held back meanwhile). */
  restartPages?: number;
}

export function startCheckpointer(
  file: string,
  { intervalMs = 250, restartPages = RESTART_PAGES }: CheckpointerOptions = {},
): Checkpointer {
  const paused = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      file,
      intervalMs,
      restartPages,
      catchUpFrames: CATCH_UP_FRAMES,
      catchUpPasses: CATCH_UP_PASSES,
      paused: paused.buffer,
      module: createRequire(import.meta.url).resolve('better-sqlite3'),
    },
  });
  let resumed: { promise: Promise<void>; resolve: () => void } | null = null;
  worker.on('message', (message) => {
    if (message !== 'resumed' || !resumed) return;
    resumed.resolve();
    resumed = null;
  });
  // It must never keep the process alive, nor take it down: the fallback threshold still holds.
  worker.unref();
  worker.on('error', () => {});
  // A worker gone mid-checkpoint holds nobody back.
  worker.on('exit', () => {
    Atomics.store(paused, 0, 0);
    resumed?.resolve();
    resumed = null;
  });
  return {
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          void worker.terminate().then(() => resolve());
        };
        const timer = setTimeout(done, 2000);
        worker.on('message', (message) => message === 'closed' && done());
        worker.once('exit', done);
        worker.postMessage('stop');
      }),
    writesPaused() {
      if (Atomics.load(paused, 0) === 0) return undefined;
      // 'resumed' is posted after the flag is cleared, so it arrives after this promise exists. (One
      // from the previous checkpoint still queued could settle it early: that write then meets the
      // lock and waits in the busy handler, as every write did before.)
      if (!resumed) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        resumed = { promise, resolve };
      }
      return resumed.promise;
    },
  };
}

/**
 * Kysely's SQLite dialect for the server's connection: while the checkpointer holds writers back, a
 * statement (or transaction) waits for the connection on the event loop instead of meeting the lock
 * and sleeping in SQLite's busy handler. Reads wait too: the connection cannot tell them apart
 * before it is taken, and a RESTART lasts 0.1-2 ms.
 */
export class CheckpointAwareDialect extends SqliteDialect {
  constructor(
    private readonly config: SqliteDialectConfig,
    private readonly writesPaused: Checkpointer['writesPaused'],
  ) {
    super(config);
  }

  override createDriver(): Driver {
    return new CheckpointAwareDriver(this.config, this.writesPaused);
  }
}

class CheckpointAwareDriver extends SqliteDriver {
  constructor(
    config: SqliteDialectConfig,
    private readonly writesPaused: Checkpointer['writesPaused'],
  ) {
    super(config);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const paused = this.writesPaused();
    if (paused) await paused;
    return super.acquireConnection();
  }

  /**
   * Takes the write lock as the transaction begins, where SQLite's busy handler waits for it. A
   * deferred transaction that read first took the lock at its first write, and SQLite answers an open
   * transaction's lock request with SQLITE_BUSY at once (waiting could deadlock): a RESTART starting
   * between the read and the write failed the request with a 503. One connection runs one transaction
   * at a time anyway, so taking the lock early serialises nothing more.
   */
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}
