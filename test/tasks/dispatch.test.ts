import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LimitExceeded } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import { ManualClock } from '../../src/clock.js';
import { insertJob, insertTask, newTaskRow } from '../../src/tasks/store/index.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { createTask, replica, taskIn, waitFor, workSettled } from './helpers.js';

const jobsOf = (t: TestApp, id: string) =>
  t.db.kysely.selectFrom('task_jobs').selectAll().where('task_id', '=', id).orderBy('id').execute();

describe('dispatch order and retries (no background workers)', () => {
  let t: TestApp;
  let key: string;
  let tenantId: string;
  let agentId: string;
  const clock = new ManualClock('2030-01-01T00:00:00.000Z');

  beforeAll(async () => {
    t = await startApp({ TASK_WORKERS: '0', TASK_SCHEDULER: 'off', RUN_LEASE_SECONDS: '2' }, { clock });
    ({ key, id: tenantId } = await t.tenant());
    agentId = (await t.agent(key, { appId: 'ops' })).id;
  });
  afterAll(() => t.close());

  const getTask = async (id: string) => (await t.api(key).GET('/api/v1/tasks/{id}', { params: { path: { id } } })).data!;

  /** Executes a claimed job while every run start fails with `error()`. */
  async function executeWhileRunsStartThrows(job: Parameters<typeof t.services.tasks.executor.execute>[0], error: () => Error) {
    const runs = t.services.runs;
    const start = runs.start;
    runs.start = async () => {
      throw error();
    };
    try {
      await t.services.tasks.executor.execute(job);
    } finally {
      runs.start = start;
    }
  }

  async function drainOrder() {
    const order: string[] = [];
    for (;;) {
      const job = await t.services.tasks.executor.claimNext();
      if (job === null) return order;
      order.push(job.task_id);
      await t.db.kysely.updateTable('task_jobs').set({ state: 'done' }).where('id', '=', job.id).execute();
    }
  }

  it('takes work by priority, then earliest dueAt (none last), then oldest', async () => {
    const make = (name: string, extra: Partial<Parameters<typeof createTask>[2]>) =>
      createTask(t, key, { agentId, name, ...extra }).then((x) => [name, x.id] as const);
    const made = [
      await make('low', { priority: 'low' }),
      await make('medium-old', {}),
      await make('critical', { priority: 'critical' }),
      await make('medium-due-late', { dueAt: '2030-06-01T00:00:00Z' }),
      await make('high', { priority: 'high' }),
      await make('medium-due-early', { dueAt: '2030-02-01T00:00:00Z' }),
      await make('medium-new', { priority: 'medium' }),
    ];
    const names = new Map(made.map(([n, id]) => [id, n]));
    expect((await drainOrder()).map((id) => names.get(id))).toEqual([
      'critical',
      'high',
      'medium-due-early',
      'medium-due-late',
      'medium-old',
      'medium-new',
      'low',
    ]);
  });

  it('claims several jobs in one statement, in claim order, and never a serial job queued behind another of its task', async () => {
    const at = new Date(clock.now()).toISOString();
    const row = (name: string, priority: string) =>
      newTaskRow({
        id: newId(),
        tenant_id: tenantId,
        agent_id: agentId,
        app_id: 'ops',
        name,
        description: name,
        priority,
        status: 'pending',
        created_at: at,
      });
    const low = row('low', 'low');
    const high = row('high', 'high');
    const serial = row('serial', 'critical');
    const jobs = {
      low: t.services.tasks.executor.newJob(low, { kind: 'agent', reason: 'created' }),
      high: t.services.tasks.executor.newJob(high, { kind: 'agent', reason: 'created' }),
      serialFirst: t.services.tasks.executor.newJob(serial, { kind: 'agent', reason: 'schedule', serial: true }),
      serialSecond: t.services.tasks.executor.newJob(serial, { kind: 'agent', reason: 'schedule', serial: true }),
    };
    await t.db.kysely.transaction().execute(async (trx) => {
      for (const task of [low, high, serial]) await insertTask(trx, task);
      // Inserted lowest priority first, so the claim's order is not the insertion order.
      for (const job of [jobs.low, jobs.serialSecond, jobs.high, jobs.serialFirst].sort((a, b) => (a.id < b.id ? -1 : 1)))
        await insertJob(trx, job);
    });
    const claimed = await t.services.tasks.executor.claimUpTo(10);
    expect(claimed.map((j) => j.id)).toEqual([jobs.serialFirst.id, jobs.high.id, jobs.low.id]);
    expect(claimed.every((j) => j.state === 'claimed' && j.attempts === 1 && j.lease_owner === t.services.tasks.executor.owner)).toBe(true);
    // The second serial job waits while the first is claimed, then is the only one left.
    expect(await t.services.tasks.executor.claimUpTo(10)).toEqual([]);
    await t.db.kysely
      .updateTable('task_jobs')
      .set({ state: 'done' })
      .where(
        'id',
        'in',
        claimed.map((j) => j.id),
      )
      .execute();
    expect((await t.services.tasks.executor.claimUpTo(10)).map((j) => j.id)).toEqual([jobs.serialSecond.id]);
    await t.db.kysely.updateTable('task_jobs').set({ state: 'done' }).where('id', '=', jobs.serialSecond.id).execute();
  });

  it('retries a failed run per the retry policy, with doubling back-off, then fails', async () => {
    const task = await createTask(t, key, {
      agentId,
      description: '/fail upstream down',
      retryPolicy: { maxAttempts: 3, backoffSeconds: 5 },
    });
    expect(task.retryPolicy).toEqual({ maxAttempts: 3, backoffSeconds: 5 });
    const runOnce = async () => {
      const job = await t.services.tasks.executor.claimNext();
      expect(job).toMatchObject({ task_id: task.id });
      await t.services.tasks.executor.execute(job as never);
    };
    await runOnce();
    let [job] = await jobsOf(t, task.id);
    expect(job).toMatchObject({ state: 'queued', attempts: 1, available_at: '2030-01-01T00:00:05.000Z', run_id: null });
    const got = await getTask(task.id);
    expect(got).toMatchObject({
      status: 'failed',
      nextRunAt: '2030-01-01T00:00:05.000Z',
      lastError: { code: 'model_error', message: 'upstream down' },
    });
    // Not before its time.
    expect(await t.services.tasks.executor.claimNext()).toBeNull();
    clock.set('2030-01-01T00:00:05.000Z');
    await runOnce();
    [job] = await jobsOf(t, task.id);
    expect(job).toMatchObject({ state: 'queued', attempts: 2, available_at: '2030-01-01T00:00:15.000Z' });
    clock.set('2030-01-01T00:00:15.000Z');
    await runOnce();
    [job] = await jobsOf(t, task.id);
    expect(job).toMatchObject({ state: 'failed', attempts: 3 });
    const final = await getTask(task.id);
    expect(final).toMatchObject({ status: 'failed', nextRunAt: null, runCount: 3 });
  });

  it('a manual retry supersedes a pending automatic retry', async () => {
    const task = await createTask(t, key, { agentId, description: '/fail nope', retryPolicy: { maxAttempts: 2, backoffSeconds: 3600 } });
    const job = await t.services.tasks.executor.claimNext();
    await t.services.tasks.executor.execute(job as never);
    expect((await jobsOf(t, task.id))[0]).toMatchObject({ state: 'queued', attempts: 1 });
    const res = await t.api(key).POST('/api/v1/tasks/{id}/retry', { params: { path: { id: task.id } } });
    expect(res.response.status).toBe(202);
    await taskIn(t, key, task.id, ['failed']);
    const jobs = await jobsOf(t, task.id);
    expect(jobs[0]).toMatchObject({
      state: 'cancelled',
      error: JSON.stringify({ code: 'superseded', message: 'superseded by a manual retry' }),
    });
    expect(jobs[1]).toMatchObject({ reason: 'retry' });
  });

  it('cancel drops a pending automatic retry', async () => {
    const task = await createTask(t, key, { agentId, description: '/fail nope', retryPolicy: { maxAttempts: 2, backoffSeconds: 3600 } });
    await t.services.tasks.executor.execute((await t.services.tasks.executor.claimNext()) as never);
    const res = await t.api(key).POST('/api/v1/tasks/{id}/cancel', { params: { path: { id: task.id } } });
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({ status: 'cancelled', nextRunAt: null });
    expect((await jobsOf(t, task.id))[0].state).toBe('cancelled');
  });

  it('work whose claiming process died before its run started loses its lease and is queued again, its attempt not spent', async () => {
    const retried = await createTask(t, key, { agentId, retryPolicy: { maxAttempts: 2, backoffSeconds: 0 } });
    const once = await createTask(t, key, { agentId });
    // Another "process" claims both, then dies without renewing (and without starting a run).
    const past = new Date(Date.now() - 1000).toISOString();
    for (const id of [retried.id, once.id]) {
      await t.db.kysely
        .updateTable('task_jobs')
        .set((eb) => ({
          state: 'claimed',
          lease_owner: 'dead-process',
          claimed_by: 'dead-process',
          lease_expires_at: past,
          attempts: eb('attempts', '+', 1),
        }))
        .where('task_id', '=', id)
        .execute();
    }
    await t.services.tasks.executor.sweep();
    for (const id of [retried.id, once.id]) {
      expect((await jobsOf(t, id))[0]).toMatchObject({ state: 'queued', attempts: 0, lease_owner: null, run_id: null });
      expect(await getTask(id)).toMatchObject({ status: 'pending', lastError: null });
    }
    // Each then runs here, once, on its first attempt (even the task with a single one).
    for (let i = 0; i < 2; i++) {
      const job = await t.services.tasks.executor.claimNext();
      expect(job).toMatchObject({ attempts: 1 });
      await t.services.tasks.executor.execute(job as never);
    }
    for (const id of [retried.id, once.id]) {
      expect(await getTask(id)).toMatchObject({ status: 'completed', runCount: 1 });
      expect(await jobsOf(t, id)).toMatchObject([{ state: 'done', attempts: 1 }]);
    }
  });

  it('a run whose start meets a database outage is queued again, its attempt not spent, and runs once when the database is back', async () => {
    const task = await createTask(t, key, { agentId });
    const job = (await t.services.tasks.executor.claimNext())!;
    expect(job).toMatchObject({ task_id: task.id, attempts: 1 });
    // The run's start fails the way a cut PostgreSQL connection does.
    await executeWhileRunsStartThrows(job, () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    const [queued] = await jobsOf(t, task.id);
    expect(queued).toMatchObject({ state: 'queued', attempts: 0, lease_owner: null, run_id: null });
    expect(queued.available_at > new Date(clock.now()).toISOString()).toBe(true);
    expect(await getTask(task.id)).toMatchObject({ status: 'pending', runCount: 0 });
    expect(await t.services.tasks.executor.claimNext()).toBeNull();
    clock.advance(5_000);
    const again = await t.services.tasks.executor.claimNext();
    expect(again).toMatchObject({ id: job.id, attempts: 1 });
    await t.services.tasks.executor.execute(again!);
    expect(await getTask(task.id)).toMatchObject({ status: 'completed', runCount: 1 });
  });

  it('automatic work refused for now (the tenant at its limit) is queued again after Retry-After on the app clock, its attempt not spent', async () => {
    const task = await createTask(t, key, { agentId });
    const job = (await t.services.tasks.executor.claimNext())!;
    expect(job).toMatchObject({ task_id: task.id, attempts: 1 });
    await executeWhileRunsStartThrows(job, () => new LimitExceeded('concurrency_limit', 'the tenant runs its maximum', 2));
    const [queued] = await jobsOf(t, task.id);
    expect(queued).toMatchObject({ state: 'queued', attempts: 0, lease_owner: null, run_id: null });
    expect(queued.available_at).toBe(new Date(clock.now() + 2_000).toISOString());
    expect(await t.services.tasks.executor.claimNext()).toBeNull();
    clock.advance(2_000);
    const again = await t.services.tasks.executor.claimNext();
    expect(again).toMatchObject({ id: job.id, attempts: 1 });
    await t.services.tasks.executor.execute(again!);
    expect(await getTask(task.id)).toMatchObject({ status: 'completed', runCount: 1 });
  });

  it('a run whose start PostgreSQL aborted as a deadlock is queued again after 1 s, its attempt not spent', async () => {
    const task = await createTask(t, key, { agentId });
    const job = (await t.services.tasks.executor.claimNext())!;
    await executeWhileRunsStartThrows(job, () => Object.assign(new Error('deadlock detected'), { code: '40P01' }));
    const [queued] = await jobsOf(t, task.id);
    expect(queued).toMatchObject({ state: 'queued', attempts: 0, lease_owner: null, run_id: null });
    expect(queued.available_at).toBe(new Date(clock.now() + 1_000).toISOString());
    clock.advance(1_000);
    const again = await t.services.tasks.executor.claimNext();
    expect(again).toMatchObject({ id: job.id, attempts: 1 });
    await t.services.tasks.executor.execute(again!);
    expect(await getTask(task.id)).toMatchObject({ status: 'completed', runCount: 1 });
  });

  it('a run interrupted in a dead process is failed by recovery and the work retried', async () => {
    const task = await createTask(t, key, { agentId, retryPolicy: { maxAttempts: 2, backoffSeconds: 0 } });
    const job = await t.services.tasks.executor.claimNext();
    const started = await t.services.tasks.executor.start(job as never);
    await started!.finished;
    // Make it look as if the run was still going in a process that died (lease expired).
    const runId = started!.runId!;
    await t.db.kysely
      .updateTable('runs')
      .set({
        status: 'running',
        completed_at: null,
        lease_owner: 'dead-process',
        lease_expires_at: new Date(Date.now() - 1000).toISOString(),
      })
      .where('id', '=', runId)
      .execute();
    await t.db.kysely
      .updateTable('task_jobs')
      .set({ state: 'running', run_id: runId })
      .where('id', '=', (job as { id: string }).id)
      .execute();
    await t.db.kysely.updateTable('tasks').set({ status: 'running' }).where('id', '=', task.id).execute();
    expect(await t.services.runs.recoverInterrupted()).toBeGreaterThanOrEqual(1);
    const [j] = await jobsOf(t, task.id);
    expect(j).toMatchObject({ state: 'queued', attempts: 1, run_id: null });
    expect(await getTask(task.id)).toMatchObject({ status: 'failed', lastError: { code: 'interrupted' } });
    await t.services.tasks.executor.execute((await t.services.tasks.executor.claimNext()) as never);
    expect(await getTask(task.id)).toMatchObject({ status: 'completed', runCount: 2 });
  });

  it('settles a job whose run ended while nobody was listening (the sweep)', async () => {
    const task = await createTask(t, key, { agentId });
    const job = (await t.services.tasks.executor.claimNext()) as { id: string };
    const started = await t.services.tasks.executor.start(job as never);
    await started!.finished;
    // As if the process died between the run's terminal write and settling the job.
    const old = new Date(Date.now() - 60_000).toISOString();
    await t.db.kysely.updateTable('task_jobs').set({ state: 'running', updated_at: old }).where('id', '=', job.id).execute();
    await t.db.kysely.updateTable('tasks').set({ status: 'running' }).where('id', '=', task.id).execute();
    await t.services.tasks.executor.sweep();
    expect((await jobsOf(t, task.id))[0].state).toBe('done');
    expect((await getTask(task.id)).status).toBe('completed');
  });
});

describe('the worker pool', () => {
  it('wakes at once when work is enqueued here (the poll is a minute)', async () => {
    const t = await startApp({ TASK_WORKERS: '2', TASK_POLL_MS: '60000' });
    try {
      const { key } = await t.tenant();
      const agentId = (await t.agent(key, { appId: 'ops' })).id;
      await new Promise((r) => setTimeout(r, 100));
      const started = Date.now();
      const task = await createTask(t, key, { agentId });
      await taskIn(t, key, task.id, ['completed'], 5000);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await t.close();
    }
  });

  it('runs at most TASK_WORKERS at once and every task exactly once', async () => {
    const t = await startApp({ TASK_WORKERS: '2', TASK_POLL_MS: '50' });
    try {
      const { key } = await t.tenant();
      const agentId = (await t.agent(key, { appId: 'ops' })).id;
      let peak = 0;
      const sampler = setInterval(() => (peak = Math.max(peak, t.services.tasks.dispatcher.activeCount)), 5);
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push((await createTask(t, key, { agentId, description: '/delay 20\na b c d' })).id);
      for (const id of ids) await taskIn(t, key, id, ['completed'], 20_000);
      clearInterval(sampler);
      expect(peak).toBe(2);
      const runs = await t.db.kysely.selectFrom('runs').select('task_id').where('task_id', 'in', ids).execute();
      expect(runs).toHaveLength(8);
    } finally {
      await t.close();
    }
  });

  it('200 due tasks on one process: exactly 200 runs', async () => {
    const t = await startApp({ TASK_WORKERS: '4', TASK_POLL_MS: '20' });
    try {
      const { key, id: tenantId } = await t.tenant();
      const agentId = (await t.agent(key, { appId: 'ops' })).id;
      const ids = await insertDueTasks(t, tenantId, agentId, 200);
      t.services.tasks.dispatcher.wake();
      await waitFor(async () => (await countRuns(t, ids, 'completed')) === 200, 60_000, '200 completed runs');
      await expectEachOnce(t, ids);
    } finally {
      await t.close();
    }
  });
});

/** Inserts `n` queued one-time tasks in one go, as if created while every dispatcher was busy. */
async function insertDueTasks(t: TestApp, tenantId: string, agentId: string, n: number) {
  const ids: string[] = [];
  const at = new Date().toISOString();
  await t.db.kysely.transaction().execute(async (trx) => {
    for (let i = 0; i < n; i++) {
      const id = newId();
      ids.push(id);
      const row = newTaskRow({
        id,
        tenant_id: tenantId,
        agent_id: agentId,
        app_id: 'ops',
        name: `bulk ${i}`,
        description: `bulk task ${i}`,
        status: 'pending',
        created_at: at,
      });
      await insertTask(trx, row);
      await insertJob(trx, t.services.tasks.executor.newJob(row, { kind: 'agent', reason: 'created' }));
    }
  });
  return ids;
}

async function countRuns(t: TestApp, ids: string[], status: string) {
  const r = await t.db.kysely
    .selectFrom('runs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('task_id', 'in', ids)
    .where('status', '=', status)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

async function expectEachOnce(t: TestApp, ids: string[]) {
  // The job settles just after its run's terminal write.
  await waitFor(
    async () =>
      (await t.db.kysely.selectFrom('task_jobs').select('id').where('task_id', 'in', ids).where('state', '=', 'done').execute()).length ===
      ids.length,
    5000,
    'settled jobs',
  );
  const runs = await t.db.kysely.selectFrom('runs').select(['task_id', 'status']).where('task_id', 'in', ids).execute();
  expect(runs).toHaveLength(ids.length);
  expect(new Set(runs.map((r) => r.task_id)).size).toBe(ids.length);
  const jobs = await t.db.kysely.selectFrom('task_jobs').select(['state', 'attempts', 'claimed_by']).where('task_id', 'in', ids).execute();
  expect(jobs.every((j) => j.state === 'done' && j.attempts === 1)).toBe(true);
  return jobs;
}

describe.skipIf(dialect !== 'postgres')('two dispatchers on one PostgreSQL database', () => {
  it('200 due tasks, two app instances: exactly 200 runs, each task once, both instances working', async () => {
    const a = await startApp({ TASK_WORKERS: '4', TASK_POLL_MS: '20' });
    const b = await replica(a, { TASK_WORKERS: '4', TASK_POLL_MS: '20' });
    try {
      const { key, id: tenantId } = await a.tenant();
      const agentId = (await a.agent(key, { appId: 'ops' })).id;
      const ids = await insertDueTasks(a, tenantId, agentId, 200);
      a.services.tasks.dispatcher.wake();
      b.services.tasks.dispatcher.wake();
      await waitFor(async () => (await countRuns(a, ids, 'completed')) === 200, 60_000, '200 completed runs');
      // Nothing more happens afterwards either: once every job has settled, nothing is left to run.
      await workSettled(a, ids);
      const jobs = await expectEachOnce(a, ids);
      const byOwner = new Map<string, number>();
      for (const j of jobs) byOwner.set(j.claimed_by!, (byOwner.get(j.claimed_by!) ?? 0) + 1);
      expect([...byOwner.keys()].sort()).toEqual([a.services.runs.instanceId, b.services.runs.instanceId].sort());
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe('work refused by the tenant’s concurrency limit', () => {
  it('waits in the queue instead of failing, and runs once a slot frees', async () => {
    const { startApp } = await import('../helpers/app.js');
    const app = await startApp({ TASK_POLL_MS: '50' });
    try {
      const { key } = await app.tenant();
      const api = app.api(key);
      await api.PUT('/api/v1/limits', { body: { maxConcurrentRuns: 1 } });
      const agent = (await api.POST('/api/v1/agents', { body: { name: 'busy', appId: 'x' } })).data!;
      const slow = await api.POST('/api/v1/tasks', { body: { name: 'slow', description: '/delay 150\na b c d e f', agentId: agent.id } });
      const quick = await api.POST('/api/v1/tasks', { body: { name: 'quick', description: 'done quickly', agentId: agent.id } });
      expect(slow.response.status).toBe(201);
      expect(quick.response.status).toBe(201);
      const states = () =>
        Promise.all(
          [slow.data!.id, quick.data!.id].map(
            async (id) => (await api.GET('/api/v1/tasks/{id}', { params: { path: { id } } })).data!.status,
          ),
        );
      await expect.poll(states, { timeout: 10_000, interval: 50 }).toEqual(['completed', 'completed']);
      const runs = await api.GET('/api/v1/tasks/{id}/runs', { params: { path: { id: quick.data!.id } } });
      expect(runs.data!.runs).toHaveLength(1);
    } finally {
      await app.close();
    }
  }, 30_000);
});
