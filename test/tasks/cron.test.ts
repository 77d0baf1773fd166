import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { cronProblem, nextFire, planFires } from '../../src/scheduler/cron.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { createTask, replica, waitFor } from './helpers.js';

const iso = (d: Date | null) => d?.toISOString() ?? null;

/** The next `n` fire times after `from`. */
function fires(expression: string, timezone: string, from: string, n: number) {
  const out: string[] = [];
  let t = new Date(from);
  for (let i = 0; i < n; i++) {
    t = nextFire(expression, timezone, t)!;
    out.push(t.toISOString());
  }
  return out;
}

describe('cron vectors', () => {
  it('computes the spec examples', () => {
    // Friday 2026-11-20 10:00 UTC.
    const from = '2026-11-20T10:00:00.000Z';
    expect(fires('0 9 * * 1-5', 'UTC', from, 3)).toEqual([
      '2026-11-23T09:00:00.000Z',
      '2026-11-24T09:00:00.000Z',
      '2026-11-25T09:00:00.000Z',
    ]);
    expect(fires('0 */2 * * *', 'UTC', from, 3)).toEqual([
      '2026-11-20T12:00:00.000Z',
      '2026-11-20T14:00:00.000Z',
      '2026-11-20T16:00:00.000Z',
    ]);
    expect(fires('*/30 * * * *', 'UTC', from, 3)).toEqual([
      '2026-11-20T10:30:00.000Z',
      '2026-11-20T11:00:00.000Z',
      '2026-11-20T11:30:00.000Z',
    ]);
    expect(fires('0 0 1 * *', 'UTC', from, 3)).toEqual([
      '2026-12-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
      '2027-02-01T00:00:00.000Z',
    ]);
  });

  it('evaluates in the time zone', () => {
    // 09:00 in New York is 14:00 UTC in winter (EST) and 13:00 UTC in summer (EDT).
    expect(fires('0 9 * * 1-5', 'America/New_York', '2026-11-20T10:00:00.000Z', 2)).toEqual([
      '2026-11-20T14:00:00.000Z',
      '2026-11-23T14:00:00.000Z',
    ]);
    expect(fires('0 9 * * 1-5', 'America/New_York', '2026-07-01T00:00:00.000Z', 1)).toEqual(['2026-07-01T13:00:00.000Z']);
    expect(fires('0 0 1 * *', 'Asia/Tokyo', '2026-11-20T10:00:00.000Z', 1)).toEqual(['2026-11-30T15:00:00.000Z']);
  });

  it('handles the spring-forward change in America/New_York (2026-03-08, 02:00 -> 03:00)', () => {
    // Daily 09:00 moves from 14:00 UTC to 13:00 UTC across the change.
    expect(fires('0 9 * * *', 'America/New_York', '2026-03-06T12:00:00.000Z', 3)).toEqual([
      '2026-03-06T14:00:00.000Z',
      '2026-03-07T14:00:00.000Z',
      '2026-03-08T13:00:00.000Z',
    ]);
    // 02:30 does not exist that day: it fires at the first instant after the gap (03:00 EDT), once.
    expect(fires('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00.000Z', 3)).toEqual([
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T06:30:00.000Z',
      '2026-03-10T06:30:00.000Z',
    ]);
    // Every 30 minutes: the hour from 02:00 to 03:00 is skipped, no double fires.
    expect(fires('*/30 * * * *', 'America/New_York', '2026-03-08T06:00:00.000Z', 3)).toEqual([
      '2026-03-08T06:30:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-08T07:30:00.000Z',
    ]);
  });

  it('handles the fall-back change in America/New_York (2026-11-01, 02:00 -> 01:00)', () => {
    // 01:30 happens twice that day: it fires once, at the first (EDT) occurrence.
    expect(fires('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00.000Z', 3)).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
      '2026-11-03T06:30:00.000Z',
    ]);
    // Daily 09:00 moves from 13:00 UTC to 14:00 UTC.
    expect(fires('0 9 * * *', 'America/New_York', '2026-10-31T00:00:00.000Z', 2)).toEqual([
      '2026-10-31T13:00:00.000Z',
      '2026-11-01T14:00:00.000Z',
    ]);
  });

  it('rejects what is not a five-field expression that fires', () => {
    expect(cronProblem('0 9 * * 1-5', 'UTC')).toBeNull();
    expect(cronProblem('0 9 * *', 'UTC')).toMatch(/five fields/);
    expect(cronProblem('0 0 9 * * 1', 'UTC')).toMatch(/five fields/);
    expect(cronProblem('@daily', 'UTC')).toMatch(/five fields/);
    expect(cronProblem('60 * * * *', 'UTC')).toMatch(/not a valid cron/);
    expect(cronProblem('* 24 * * *', 'UTC')).toMatch(/not a valid cron/);
    expect(cronProblem('0 0 31 2 *', 'UTC')).toMatch(/never fires/);
  });

  it('plans misfires: on time, skip, fire_once', () => {
    const at = (s: string) => new Date(s);
    const grace = 60_000;
    /** `expression` in UTC with a minute's grace. */
    const utc = (expression: string, misfirePolicy: 'skip' | 'fire_once') => ({
      expression,
      timezone: 'UTC',
      graceMs: grace,
      misfirePolicy,
    });
    // On time (20 s late): fires, nothing missed.
    expect(planFires(utc('*/30 * * * *', 'skip'), at('2026-11-20T10:30:00Z'), at('2026-11-20T10:30:20Z'))).toEqual({
      fire: at('2026-11-20T10:30:00Z'),
      fireReason: null,
      missedCount: 0,
      firstMissed: null,
      next: at('2026-11-20T11:00:00Z'),
    });
    // Three times overdue, the latest on time: it fires; two are missed.
    const p = planFires(utc('*/30 * * * *', 'skip'), at('2026-11-20T10:30:00Z'), at('2026-11-20T11:30:30Z'));
    expect([iso(p.fire), p.missedCount, iso(p.firstMissed), iso(p.next)]).toEqual([
      '2026-11-20T11:30:00.000Z',
      2,
      '2026-11-20T10:30:00.000Z',
      '2026-11-20T12:00:00.000Z',
    ]);
    // All late: skip fires nothing; fire_once fires the latest once.
    const s = planFires(utc('*/30 * * * *', 'skip'), at('2026-11-20T10:30:00Z'), at('2026-11-20T11:40:00Z'));
    expect([iso(s.fire), s.missedCount, iso(s.next)]).toEqual([null, 3, '2026-11-20T12:00:00.000Z']);
    const f = planFires(utc('*/30 * * * *', 'fire_once'), at('2026-11-20T10:30:00Z'), at('2026-11-20T11:40:00Z'));
    expect([iso(f.fire), f.fireReason, f.missedCount]).toEqual(['2026-11-20T11:30:00.000Z', 'misfire', 2]);
    // A year of minutes: bounded work, still one decision.
    const long = planFires(utc('* * * * *', 'skip'), at('2025-11-20T10:30:00Z'), at('2026-11-20T10:30:10Z'));
    expect(iso(long.fire)).toBe('2026-11-20T10:30:00.000Z');
    expect(long.missedCount).toBeGreaterThanOrEqual(999);
  });
});

describe('cron firing', () => {
  let t: TestApp;
  let key: string;
  let agentId: string;
  const clock = new ManualClock('2026-11-20T10:05:00.000Z');

  beforeAll(async () => {
    t = await startApp({ TASK_WORKERS: '0', TASK_SCHEDULER: 'off' }, { clock });
    ({ key } = await t.tenant());
    agentId = (await t.agent(key, { appId: 'ops' })).id;
  });
  afterAll(() => t.close());

  const tick = () => t.services.tasks.cron.tick();
  const byId = (id: string) => ({ params: { path: { id } } });
  const firesOf = async (id: string) =>
    (await t.api(key).GET('/api/v1/tasks/{id}/fires', { params: { path: { id }, query: { limit: 100 } } })).data!.fires.reverse();
  const getTask = async (id: string) => (await t.api(key).GET('/api/v1/tasks/{id}', byId(id))).data!;
  const deleteTask = (id: string) => t.api(key).DELETE('/api/v1/tasks/{id}', byId(id));
  const jobsOf = (id: string) => t.db.kysely.selectFrom('task_jobs').selectAll().where('task_id', '=', id).orderBy('id').execute();
  const scheduled = (body: Partial<Parameters<typeof createTask>[2]> = {}) =>
    createTask(t, key, { agentId, type: 'scheduled', schedule: '*/30 * * * *', ...body });

  it('fires each cron time once, when it comes', async () => {
    clock.set('2026-11-20T10:05:00.000Z');
    const task = await scheduled();
    expect(task.nextRunAt).toBe('2026-11-20T10:30:00.000Z');
    clock.set('2026-11-20T10:29:59.999Z');
    await tick();
    expect(await firesOf(task.id)).toEqual([]);
    clock.set('2026-11-20T10:30:00.400Z');
    expect(await tick()).toBeGreaterThanOrEqual(1);
    await tick();
    const recorded = await firesOf(task.id);
    expect(recorded).toEqual([
      {
        id: expect.any(String),
        source: 'schedule',
        scheduledFor: '2026-11-20T10:30:00.000Z',
        decidedAt: '2026-11-20T10:30:00.400Z',
        decision: 'fired',
        reason: null,
        missed: 0,
        jobId: expect.any(String),
        detail: {},
      },
    ]);
    const jobs = await jobsOf(task.id);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ id: recorded[0].jobId, state: 'queued', reason: 'schedule', available_at: '2026-11-20T10:30:00.400Z' });
    const got = await getTask(task.id);
    // Queued work is due now; the cron time after it is stored for the next fire.
    expect(got.nextRunAt).toBe('2026-11-20T10:30:00.400Z');
    expect(got.fires).toHaveLength(1);
    const row = await t.db.kysely.selectFrom('tasks').select('next_run_at').where('id', '=', task.id).executeTakeFirstOrThrow();
    expect(row.next_run_at).toBe('2026-11-20T11:00:00.000Z');
    await deleteTask(task.id);
  });

  it('overlap skip (default): a fire while work is active is skipped and recorded', async () => {
    clock.set('2026-11-20T10:05:00.000Z');
    const task = await scheduled();
    clock.set('2026-11-20T10:30:01.000Z');
    await tick();
    clock.set('2026-11-20T11:00:01.000Z');
    await tick();
    const recorded = await firesOf(task.id);
    expect(recorded.map((f) => [f.decision, f.reason])).toEqual([
      ['fired', null],
      ['skipped', 'overlap'],
    ]);
    expect(await jobsOf(task.id)).toHaveLength(1);
    await deleteTask(task.id);
  });

  it('overlap queue: one fire waits for the running work, later ones are skipped', async () => {
    clock.set('2026-11-20T10:05:00.000Z');
    const task = await scheduled({ overlapPolicy: 'queue', description: '/delay 100\na b c d e' });
    clock.set('2026-11-20T10:30:01.000Z');
    await tick();
    const first = await t.services.tasks.executor.claimNext();
    expect(first).toMatchObject({ task_id: task.id });
    const started = await t.services.tasks.executor.start(first as never);
    clock.set('2026-11-20T11:00:01.000Z');
    await tick();
    clock.set('2026-11-20T11:30:01.000Z');
    await tick();
    expect((await firesOf(task.id)).map((f) => [f.decision, f.reason])).toEqual([
      ['fired', null],
      ['queued', null],
      ['skipped', 'already_queued'],
    ]);
    // The waiting job is not claimable while the first runs.
    expect(await t.services.tasks.executor.claimNext()).toBeNull();
    await started!.finished;
    const second = await t.services.tasks.executor.claimNext();
    expect(second).toMatchObject({ task_id: task.id, serial: 1 });
    await t.services.tasks.executor.execute(second as never);
    const runs = await t.db.kysely
      .selectFrom('runs')
      .select(['started_at', 'completed_at'])
      .where('task_id', '=', task.id)
      .orderBy('id')
      .execute();
    expect(runs).toHaveLength(2);
    expect(runs[1].started_at! >= runs[0].completed_at!).toBe(true);
    await deleteTask(task.id);
  });

  it('overlap allow: every fire queues work', async () => {
    clock.set('2026-11-20T10:05:00.000Z');
    const task = await scheduled({ overlapPolicy: 'allow' });
    for (const at of ['2026-11-20T10:30:01.000Z', '2026-11-20T11:00:01.000Z', '2026-11-20T11:30:01.000Z']) {
      clock.set(at);
      await tick();
    }
    expect((await firesOf(task.id)).map((f) => f.decision)).toEqual(['fired', 'fired', 'fired']);
    expect(await jobsOf(task.id)).toHaveLength(3);
    await deleteTask(task.id);
  });

  it('misfire skip (default): late cron times are skipped, an on-time one still fires', async () => {
    clock.set('2026-11-20T10:05:00.000Z');
    const late = await scheduled();
    const partly = await scheduled();
    // Down from 10:05 to 12:10: 10:30, 11:00, 11:30, 12:00 all passed more than a minute ago.
    clock.set('2026-11-20T12:10:00.000Z');
    await t.services.tasks.cron.tick();
    expect(await firesOf(late.id)).toEqual([
      expect.objectContaining({ decision: 'skipped', reason: 'misfire', missed: 4, scheduledFor: '2026-11-20T10:30:00.000Z', jobId: null }),
    ]);
    expect(await jobsOf(late.id)).toHaveLength(0);
    expect((await getTask(late.id)).nextRunAt).toBe('2026-11-20T12:30:00.000Z');
    // The other was caught 30 s after 12:30: 12:30 fires, the older ones are a recorded misfire.
    await deleteTask(late.id);
    clock.set('2026-11-20T12:30:30.000Z');
    await tick();
    const recorded = await firesOf(partly.id);
    expect(recorded.map((f) => [f.decision, f.reason, f.missed, f.scheduledFor])).toEqual([
      ['skipped', 'misfire', 4, '2026-11-20T10:30:00.000Z'],
      ['fired', null, 0, '2026-11-20T12:30:00.000Z'],
    ]);
    await deleteTask(partly.id);
  });

  it('misfire fire_once: late cron times run once', async () => {
    clock.set('2026-11-20T10:05:00.000Z');
    const task = await scheduled({ misfirePolicy: 'fire_once' });
    expect(task.misfirePolicy).toBe('fire_once');
    clock.set('2026-11-20T12:10:00.000Z');
    await tick();
    await tick();
    expect(await firesOf(task.id)).toEqual([
      expect.objectContaining({
        decision: 'fired',
        reason: 'misfire',
        missed: 3,
        scheduledFor: '2026-11-20T12:00:00.000Z',
        detail: { policy: 'fire_once' },
      }),
    ]);
    expect(await jobsOf(task.id)).toHaveLength(1);
    await deleteTask(task.id);
  });

  it('keeps firing whatever the last run’s outcome; a dispatched fire runs the agent', async () => {
    clock.set('2026-11-20T10:05:00.000Z');
    const task = await scheduled({ description: 'nightly\n/fail flaky upstream' });
    clock.set('2026-11-20T10:30:01.000Z');
    await tick();
    const job = await t.services.tasks.executor.claimNext();
    await t.services.tasks.executor.execute(job as never);
    expect((await getTask(task.id)).status).toBe('failed');
    clock.set('2026-11-20T11:00:01.000Z');
    await tick();
    expect((await firesOf(task.id)).map((f) => f.decision)).toEqual(['fired', 'fired']);
    await deleteTask(task.id);
  });

  it('fires across a daylight-saving change in the task’s time zone', async () => {
    clock.set('2026-03-07T12:00:00.000Z');
    const task = await createTask(t, key, {
      agentId,
      type: 'scheduled',
      schedule: '30 2 * * *',
      timezone: 'America/New_York',
      overlapPolicy: 'allow',
    });
    expect(task.nextRunAt).toBe('2026-03-08T07:00:00.000Z');
    clock.set('2026-03-08T07:00:05.000Z');
    await tick();
    clock.set('2026-03-09T06:30:05.000Z');
    await tick();
    expect((await firesOf(task.id)).map((f) => [f.scheduledFor, f.decision])).toEqual([
      ['2026-03-08T07:00:00.000Z', 'fired'],
      ['2026-03-09T06:30:00.000Z', 'fired'],
    ]);
    await deleteTask(task.id);

    clock.set('2026-10-31T12:00:00.000Z');
    const fall = await createTask(t, key, {
      agentId,
      type: 'scheduled',
      schedule: '30 1 * * *',
      timezone: 'America/New_York',
      overlapPolicy: 'allow',
    });
    expect(fall.nextRunAt).toBe('2026-11-01T05:30:00.000Z');
    for (const at of ['2026-11-01T05:30:01.000Z', '2026-11-01T06:30:01.000Z', '2026-11-02T06:30:01.000Z']) {
      clock.set(at);
      await tick();
    }
    // The repeated 01:30 (06:30 UTC, EST) does not fire a second time.
    expect((await firesOf(fall.id)).map((f) => f.scheduledFor)).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
    await deleteTask(fall.id);
  });

  it('stops firing once deleted', async () => {
    clock.set('2026-11-20T10:05:00.000Z');
    const task = await scheduled();
    await deleteTask(task.id);
    clock.set('2026-11-20T10:30:01.000Z');
    await tick();
    const recorded = await t.db.kysely.selectFrom('task_fires').select('id').where('task_id', '=', task.id).execute();
    expect(recorded).toHaveLength(0);
  });
});

describe('cron in the background', () => {
  it('fires a every-minute schedule by itself and runs it (real clock, short poll)', async () => {
    // Let the scheduler believe the next minute is here.
    const clock = new ManualClock(new Date());
    const t = await startApp({ TASK_POLL_MS: '50' }, { clock });
    try {
      const { key } = await t.tenant();
      const agentId = (await t.agent(key, { appId: 'ops' })).id;
      const task = await createTask(t, key, { agentId, type: 'scheduled', schedule: '* * * * *', description: 'tick' });
      clock.set(new Date(Date.parse(task.nextRunAt!) + 10));
      const done = await waitFor(
        async () => {
          const got = (await t.api(key).GET('/api/v1/tasks/{id}', { params: { path: { id: task.id } } })).data!;
          return got.status === 'completed' ? got : null;
        },
        10_000,
        'the scheduled run',
      );
      expect(done.output).toBe(`tick\n\n{"scheduledFor":"${task.nextRunAt}"}`);
      expect(done.fires).toHaveLength(1);
    } finally {
      await t.close();
    }
  });
});

describe.skipIf(dialect !== 'postgres')('cron across replicas (PostgreSQL)', () => {
  it('two replicas ticking together claim each cron time exactly once', async () => {
    const clock = new ManualClock('2026-11-20T10:05:00.000Z');
    const t = await startApp({ TASK_WORKERS: '0', TASK_SCHEDULER: 'off' }, { clock });
    const other = await replica(t, { TASK_WORKERS: '0', TASK_SCHEDULER: 'off' }, { clock });
    try {
      const { key } = await t.tenant();
      const agentId = (await t.agent(key, { appId: 'ops' })).id;
      const ids: string[] = [];
      for (let i = 0; i < 20; i++)
        ids.push((await createTask(t, key, { agentId, type: 'scheduled', schedule: '*/30 * * * *', overlapPolicy: 'allow' })).id);
      for (const at of ['2026-11-20T10:30:01.000Z', '2026-11-20T11:00:01.000Z', '2026-11-20T11:30:01.000Z']) {
        clock.set(at);
        const claimed = await Promise.all([
          t.services.tasks.cron.tick(),
          other.services.tasks.cron.tick(),
          t.services.tasks.cron.tick(),
          other.services.tasks.cron.tick(),
        ]);
        expect(claimed.reduce((a, b) => a + b, 0)).toBe(20);
      }
      const rows = await t.db.kysely
        .selectFrom('task_fires')
        .select(['task_id', 'scheduled_for', 'decision'])
        .where('task_id', 'in', ids)
        .execute();
      expect(rows).toHaveLength(60);
      expect(new Set(rows.map((r) => `${r.task_id}/${r.scheduled_for}`)).size).toBe(60);
      expect(rows.every((r) => r.decision === 'fired')).toBe(true);
      const jobs = await t.db.kysely.selectFrom('task_jobs').select('id').where('task_id', 'in', ids).execute();
      expect(jobs).toHaveLength(60);
    } finally {
      await other.close();
      await t.close();
    }
  });
});
