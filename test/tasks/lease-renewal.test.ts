import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { renewJobLeases } from '../../src/tasks/store/jobs.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { createTask } from './helpers.js';

/**
 * A process renews the leases of the jobs it holds in one statement. A job can at the same moment be
 * changed by another transaction (a batch of run starts moves several jobs to running), which locks
 * rows in its own order; a renewal that waited for such a row deadlocked with it (seen under
 * dispatcher-10k on PostgreSQL). The renewal skips a row locked elsewhere and renews it next time.
 */

let t: TestApp;
let key: string;
let agentId: string;

beforeAll(async () => {
  t = await startApp({ TASK_WORKERS: '0', TASK_SCHEDULER: 'off' });
  ({ key } = await t.tenant());
  agentId = (await t.agent(key)).id;
});
afterAll(() => t?.close());

describe.skipIf(dialect !== 'postgres')('task lease renewal on PostgreSQL', () => {
  it('does not wait for a held job that another transaction has locked; it renews the others', async () => {
    const tasks = [await createTask(t, key, { agentId, type: 'one_time' }), await createTask(t, key, { agentId, type: 'one_time' })];
    const jobs = await t.db.kysely
      .selectFrom('task_jobs')
      .select('id')
      .where(
        'task_id',
        'in',
        tasks.map((task) => task.id),
      )
      .orderBy('id')
      .execute();
    expect(jobs).toHaveLength(2);
    const owner = 'replica-under-test';
    const before = new Date(Date.now() + 1_000).toISOString();
    await t.db.kysely
      .updateTable('task_jobs')
      .set({ state: 'claimed', lease_owner: owner, claimed_by: owner, lease_expires_at: before })
      .where(
        'id',
        'in',
        jobs.map((j) => j.id),
      )
      .execute();

    // Another transaction holds the second job's row, as a batch of run starts does.
    const holder = new pg.Client({ connectionString: t.config.databaseUrl });
    // Outside the holder's transaction: pg_stat_activity is read once per transaction.
    const observer = new pg.Client({ connectionString: t.config.databaseUrl });
    await holder.connect();
    await observer.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from task_jobs where id = $1 for update', [jobs[1].id]);

      const until = new Date(Date.now() + 60_000).toISOString();
      const renewal = renewJobLeases(t.db.kysely, 'postgres', { owner, jobIds: [jobs[0].id, jobs[1].id], until });
      const waitedForTheLock = () =>
        vi
          .waitFor(
            async () => {
              const waiting = await observer.query(
                `select count(*)::int as n from pg_stat_activity
                  where datname = current_database() and wait_event_type = 'Lock' and query like 'update "task_jobs" set "lease_expires_at"%'`,
              );
              if (waiting.rows[0].n === 0) throw new Error('no renewal waits for a lock yet');
              return 'waited for the lock';
            },
            { timeout: 5000, interval: 25 },
          )
          .catch(() => 'never waited');
      expect(await Promise.race([renewal.then(() => 'renewed'), waitedForTheLock()])).toBe('renewed');
      await holder.query('rollback');

      const leases = await t.db.kysely
        .selectFrom('task_jobs')
        .select(['id', 'lease_expires_at'])
        .where(
          'id',
          'in',
          jobs.map((j) => j.id),
        )
        .orderBy('id')
        .execute();
      expect(leases.map((j) => j.lease_expires_at)).toEqual([until, before]);

      // Once the row is free, the next renewal takes it.
      await renewJobLeases(t.db.kysely, 'postgres', { owner, jobIds: [jobs[0].id, jobs[1].id], until });
      const after = await t.db.kysely
        .selectFrom('task_jobs')
        .select('lease_expires_at')
        .where('id', '=', jobs[1].id)
        .executeTakeFirstOrThrow();
      expect(after.lease_expires_at).toBe(until);
    } finally {
      await holder.query('rollback').catch(() => {});
      await holder.end();
      await observer.end();
    }
  });
});
