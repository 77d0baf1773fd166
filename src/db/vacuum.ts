import SQLite from 'better-sqlite3';
import { createPrivateFile } from '../private-files.js';

/**
 * SQLite hands deleted rows' pages back to the file system only by vacuuming. A database made since
 * retention came in is `auto_vacuum = INCREMENTAL` (database.ts sets it before the first table), so
 * `incremental_vacuum` returns free pages a chunk at a time without rewriting the file; an older one
 * (auto_vacuum NONE) reuses its free pages but keeps its size until `agentry vacuum` converts it
 * (docs/operations.md, "Retention").
 */

/** Pages returned per statement: each holds the write lock for about a millisecond (4 KiB pages). */
const PAGES_PER_STEP = 256;

export interface Reclaimed {
  /** Pages handed back to the file system. */
  pages: number;
  /** False when the database is not in incremental mode (nothing could be handed back). */
  incremental: boolean;
}

/** Tries of one step that met the write lock, with a pause between: about 4 s in all. */
const BUSY_PAUSES_MS = [20, 100, 300, 1000, 2500];

export interface ReclaimOptions {
  /** Pages handed back at most (default 65,536: 256 MiB a pass). */
  maxPages?: number;
  /** While the WAL checkpointer holds writers back (its writesPaused), a promise to wait for first. */
  writesPaused?: () => Promise<void> | undefined;
}

/**
 * Hands free pages back, at most `maxPages`, a chunk per statement with a turn of the event loop
 * between (writers go ahead). Its own connection: the statement must run to its end (sqlite3_exec),
 * which Kysely's driver does not do for a pragma returning no rows. The connection waits only briefly
 * for the write lock (SQLite's busy handler sleeps on the event loop): a step that meets it waits
 * asynchronously (for the checkpointer, or a pause) and tries again, so a backlog's space comes back
 * even while the checkpointer rewinds the WAL.
 */
export async function reclaimFreePages(file: string, { maxPages = 65_536, writesPaused }: ReclaimOptions = {}): Promise<Reclaimed> {
  const sqlite = new SQLite(file, { fileMustExist: true });
  try {
    sqlite.pragma('busy_timeout = 50');
    if (sqlite.pragma('auto_vacuum', { simple: true }) !== 2) return { pages: 0, incremental: false };
    let pages = 0;
    let busy = 0;
    while (pages < maxPages) {
      const paused = writesPaused?.();
      if (paused) await paused;
      const free = sqlite.pragma('freelist_count', { simple: true }) as number;
      if (!free) break;
      const step = Math.min(free, PAGES_PER_STEP, maxPages - pages);
      try {
        sqlite.exec(`pragma incremental_vacuum(${step})`);
      } catch (err) {
        if (!/^SQLITE_(BUSY|LOCKED)/.test(String((err as { code?: unknown }).code)) || busy >= BUSY_PAUSES_MS.length) throw err;
        await new Promise<void>((resolve) => setTimeout(resolve, BUSY_PAUSES_MS[busy++]));
        continue;
      }
      busy = 0;
      pages += step;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return { pages, incremental: true };
  } finally {
    sqlite.close();
  }
}

/** Converts a database to incremental auto-vacuum with a full VACUUM (rewrites the file: run it with the server stopped). */
export function convertToIncrementalVacuum(file: string): { before: number; after: number } {
  const sqlite = new SQLite(file, { fileMustExist: true });
  try {
    sqlite.pragma('busy_timeout = 5000');
    const before = sqlite.pragma('auto_vacuum', { simple: true }) as number;
    sqlite.pragma('auto_vacuum = INCREMENTAL');
    sqlite.exec('VACUUM');
    return { before, after: sqlite.pragma('auto_vacuum', { simple: true }) as number };
  } finally {
    sqlite.close();
  }
}

/**
 * `agentry backup`: a consistent copy of the database into `out` (a new file, mode 0600) while the
 * server keeps writing, through SQLite's online backup (better-sqlite3's `backup()`, which copies
 * pages in steps and starts over when another connection writes meanwhile). The pages copied.
 */
export async function backupSqlite(file: string, out: string): Promise<number> {
  const sqlite = new SQLite(file, { fileMustExist: true });
  try {
    createPrivateFile(out);
    const { totalPages } = await sqlite.backup(out);
    return totalPages;
  } finally {
    sqlite.close();
  }
}
