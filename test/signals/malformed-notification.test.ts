import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresSignalBus } from '../../src/signals/bus.js';
import { createTestDatabase, dialect, type TestDatabase } from '../helpers/app.js';

let database: TestDatabase;
beforeAll(async () => (database = await createTestDatabase()));
afterAll(() => database?.drop());

describe.skipIf(dialect !== 'postgres')('a signal notification that does not fit its schema', () => {
  it('is dropped with a warning; the signals after it are delivered', async () => {
    const url = database.env.DATABASE_URL!;
    const warnings: string[] = [];
    const bus = new PostgresSignalBus(url, (err) => warnings.push((err as Error).message));
    await bus.start();
    const received: Record<string, unknown>[] = [];
    const delivered = new Promise<void>((resolve) =>
      bus.subscribe('run.cancel', (payload) => {
        received.push(payload);
        resolve();
      }),
    );
    const sender = new pg.Client({ connectionString: url });
    await sender.connect();
    try {
      await sender.query(`SELECT pg_notify('agentry_signals', $1)`, ['{"topic":"run.cancel"']);
      await sender.query(`SELECT pg_notify('agentry_signals', $1)`, ['{"topic":"run.cancel","payload":"all of them"}']);
      await bus.publish('run.cancel', { runId: 'r1' });
      await delivered;
      expect(received).toEqual([{ runId: 'r1' }]);
      expect(warnings).toEqual(['a signal notification is not JSON', 'a signal notification does not fit its schema']);
    } finally {
      await sender.end();
      await bus.close();
    }
  });
});
