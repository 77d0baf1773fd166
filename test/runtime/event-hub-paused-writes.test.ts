import SQLite from 'better-sqlite3';
import { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointAwareDialect } from '../../src/db/checkpointer.js';
import type { Db } from '../../src/db/database.js';
import type { Database } from '../../src/db/schema.js';
import { RunEventHub, readStoredEvents, type RunEvent } from '../../src/runs/events.js';
import { dialect, openTestDb } from '../helpers/app.js';

const turn = () => new Promise<void>((r) => setImmediate(r));

/**
 * While the SQLite checkpointer holds writers back (db/checkpointer.ts), the server's connection holds
 * the hub's writes back, and the hub publishes nothing meanwhile: a listener still only ever sees
 * stored events.
 */
describe.skipIf(dialect !== 'sqlite')('the event hub while writes are held back', () => {
  let opened: Awaited<ReturnType<typeof openTestDb>>;
  beforeAll(async () => {
    opened = await openTestDb();
  });
  afterAll(() => opened?.close());

  it('writes and publishes once the pause is over', async () => {
    let release!: () => void;
    let paused: Promise<void> | undefined = new Promise<void>((r) => (release = r));
    // The server's connection as openDatabase makes it, with the checkpointer's flag in the test's hands.
    const connection = new Kysely<Database>({
      dialect: new CheckpointAwareDialect({ database: new SQLite(opened.db.location) }, () => paused),
    });
    const db: Db = { ...opened.db, kysely: connection };
    const hub = new RunEventHub(db, (err) => {
      throw err;
    });
    const channel = hub.open('paused-run', 't1');
    const seen: (RunEvent | null)[] = [];
    channel.follow(0, (e) => seen.push(e));
    channel.emit('token', { text: 'hello' });
    for (let i = 0; i < 5; i++) await turn();
    expect(seen).toEqual([]);
    // Read on the test's own connection: the held one would wait for the pause.
    expect(await readStoredEvents(opened.db, 'paused-run', 0)).toEqual([]);
    paused = undefined;
    release();
    await channel.flushed();
    const expected = [{ seq: 1, event: 'token', data: { text: 'hello' } }];
    expect(seen).toEqual(expected);
    expect(await readStoredEvents(opened.db, 'paused-run', 0)).toEqual(expected);
    await connection.destroy();
  });
});
