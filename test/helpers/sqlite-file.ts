import { sql } from 'kysely';
import type { Db } from '../../src/db/database.js';

/**
 * Copies the whole WAL into the database file and empties it, so the file's size is the database's.
 * A checkpoint that finds another one under way (the server's checkpointer worker, every 250 ms) returns
 * busy at once, having copied nothing: it is tried again until one completes.
 */
export async function checkpointWholeWal(db: Db['kysely'], timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql<{ busy: number }>`pragma wal_checkpoint(TRUNCATE)`.execute(db);
    if (rows[0].busy === 0) return;
    if (Date.now() > deadline) throw new Error(`the WAL could not be checkpointed whole within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
