import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * SQLite's WAL checkpoints, off the event loop. By default the connection that commits past
 * `wal_autocheckpoint` pages copies the WAL back into the database file and syncs it, inside that
 * commit: on this project's write-heavy paths (every run, every task) that was a third of the cost of
 * a commit (106 -> 72 µs measured on SQLite; docs/benchmarks.md). A worker thread with its own
 * connection runs a PASSIVE checkpoint (it never blocks writers or readers) every `intervalMs`, and
 * when the WAL has grown past RESTART_PAGES anyway, a RESTART one that makes writers wait for the rest
 * (little, as the passive one has just copied most), so that the next write rewinds the WAL: without
 * it, steady writes grew the WAL by 14 MB/s. The server's connection keeps a much higher automatic
 * threshold only as a fallback should the worker stop.
 */

/** WAL pages (4 KiB) past which the worker's checkpoint waits for writers to finish the job. */
const RESTART_PAGES = 2_000;

/** Pages after which a commit on the main connection checkpoints by itself: the fallback. */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 20_000;

// CommonJS, as eval'd workers are: the better-sqlite3 module's path comes in workerData.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 1000');
db.pragma('synchronous = NORMAL');
const checkpoint = () => {
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    // Under steady writes a passive checkpoint never catches up with the end of the WAL, and the WAL
    // is rewound only after one did: past restartPages, writers wait for the (short) rest.
    if (r && r.log > workerData.restartPages) db.pragma('wal_checkpoint(RESTART)');
  } catch {}
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
}

export function startCheckpointer(file: string, intervalMs = 250): Checkpointer {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file, intervalMs, restartPages: RESTART_PAGES, module: createRequire(import.meta.url).resolve('better-sqlite3') },
  });
  // It must never keep the process alive, nor take it down: the fallback threshold still holds.
  worker.unref();
  worker.on('error', () => {});
  return {
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          void worker.terminate().then(() => resolve());
        };
        const timer = setTimeout(done, 2000);
        worker.once('message', done);
        worker.once('exit', done);
        worker.postMessage('stop');
      }),
  };
}
