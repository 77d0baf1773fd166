import SQLite from 'better-sqlite3';
import { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointAwareDialect } from '../../src/db/checkpointer.js';
import type { Db } from '../../src/db/database.js';
import type { Database } from '../../src/db/schema.js';
import { RunEventHub, readStoredEvents, type RunEvent } from '../../src/runs/events.js';
import * as store from '../../src/runs/store.js';
import { dialect, openTestDb } from '../helpers/app.js';

const turn = () => new Promise<void>((r) => setImmediate(r));

/**
 * A run that executes before its start is written (runs/service.ts startAhead) has a held channel:
 * what it emits is neither written nor given to listeners until the start is committed and the
 * channel released; then it goes out in order, before anything emitted later. Real database, both
 * dialects.
 */
describe('a held run channel', () => {
  let opened: Awaited<ReturnType<typeof openTestDb>>;
  let db: Db;
  const announced: [string, number][] = [];

  beforeAll(async () => {
    opened = await openTestDb();
    db = opened.db;
  });
  afterAll(() => opened?.close());

  const stored = (runId: string) => readStoredEvents(db, runId, 0);

  it('writes and publishes nothing until released, then everything in order', async () => {
    const hub = new RunEventHub(
      db,
      (err) => {
        throw err;
      },
      (runId, seq) => announced.push([runId, seq]),
    );
    const held = hub.open('held-run', 't1', { held: true });
    const free = hub.open('free-run', 't1');
    const seen: (RunEvent | null)[] = [];
    held.follow(0, (e) => seen.push(e));

    held.emit('token', { text: 'a ' });
    held.emit('token', { text: 'b' });
    free.emit('token', { text: 'x' });
    await turn();
    await hub.flush();
    // The other run's events went out; the held run's wait.
    expect(await stored('free-run')).toEqual([{ seq: 1, event: 'token', data: { text: 'x' } }]);
    expect(await stored('held-run')).toEqual([]);
    expect(seen).toEqual([]);

    // Waiting for its events to be out waits for the release.
    let flushed = false;
    const whenFlushed = held.flushed().then(() => (flushed = true));
    await turn();
    expect(flushed).toBe(false);

    held.release();
    held.emit('token', { text: ' c' });
    await whenFlushed;
    await hub.flush();
    const expected = [
      { seq: 1, event: 'token', data: { text: 'a ' } },
      { seq: 2, event: 'token', data: { text: 'b' } },
      { seq: 3, event: 'token', data: { text: ' c' } },
    ];
    expect(await stored('held-run')).toEqual(expected);
    expect(seen).toEqual(expected);
    expect(announced.filter(([runId]) => runId === 'held-run').at(-1)).toEqual(['held-run', 3]);

    await hub.close(held);
    expect(seen.at(-1)).toBeNull();
    // Followed live: kept a while for a client reconnecting.
    expect(hub.get('held-run')).toBeDefined();
    await hub.close(free);
    // Nobody followed it: dropped at once.
    expect(hub.get('free-run')).toBeUndefined();
  });

  it('lets the start take what was emitted while held, so the hub never writes it', async () => {
    const hub = new RunEventHub(db, (err) => {
      throw err;
    });
    const held = hub.open('taken-run', 't1', { held: true });
    held.emit('token', { text: 'one' });
    await turn();
    await hub.flush();
    // As startAhead's write does: it takes the waiting events and writes them with the start.
    const taken = held.takePending();
    await store.insertEvents(
      db.kysely,
      taken.map((e) => ({ run_id: 'taken-run', seq: e.seq, event: e.event, data: JSON.stringify(e.data) })),
    );
    held.release();
    await held.written(taken);
    await hub.flush();
    expect(await stored('taken-run')).toEqual([{ seq: 1, event: 'token', data: { text: 'one' } }]);
    expect(held.events).toEqual([{ seq: 1, event: 'token', data: { text: 'one' } }]);
  });
});

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
