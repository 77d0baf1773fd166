import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { createTask, deliverWebhook, hookSecret, taskIn, waitFor } from './helpers.js';

type TaskInput = NonNullable<paths['/api/v1/tasks']['post']['requestBody']>['content']['application/json'];
type TaskQuery = NonNullable<paths['/api/v1/tasks']['get']['parameters']['query']>;

/**
 * The tasks API: every endpoint and transition, valid and not. The app dispatches nothing by itself
 * here (TASK_WORKERS=0, no cron), so queued states hold still; `dispatch()` plays the worker.
 */

let t: TestApp;
let key: string;
let otherKey: string;
let tenantId: string;
let agentId: string;

beforeAll(async () => {
  t = await startApp({ TASK_WORKERS: '0', TASK_SCHEDULER: 'off' });
  ({ key, id: tenantId } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
  agentId = (await t.agent(key, { appId: 'ops' })).id;
});
afterAll(() => t.close());

/** Dispatches every due job, as a worker would, and waits for the work to end. */
async function dispatch() {
  let n = 0;
  for (;;) {
    const job = await t.services.tasks.executor.claimNext();
    if (job === null) return n;
    await t.services.tasks.executor.execute(job);
    n++;
  }
}

const byId = (id: string) => ({ params: { path: { id } } });
const create = (body: TaskInput, k = key) => t.api(k).POST('/api/v1/tasks', { body });
const get = (id: string, k = key) => t.api(k).GET('/api/v1/tasks/{id}', byId(id));
// The run route takes no body at all, but its generated type asks for one: {} says the same.
const run = (id: string, input?: Record<string, unknown>, k = key) =>
  t.api(k).POST('/api/v1/tasks/{id}/run', { ...byId(id), body: input === undefined ? {} : { input } });
const cancel = (id: string, k = key) => t.api(k).POST('/api/v1/tasks/{id}/cancel', byId(id));
const retry = (id: string, k = key) => t.api(k).POST('/api/v1/tasks/{id}/retry', byId(id));
const approve = (id: string, k = key) => t.api(k).POST('/api/v1/tasks/{id}/approve', byId(id));
const reject = (id: string, k = key) => t.api(k).POST('/api/v1/tasks/{id}/reject', byId(id));
const remove = (id: string, k = key) => t.api(k).DELETE('/api/v1/tasks/{id}', byId(id));
const runsOf = (id: string, k = key) => t.api(k).GET('/api/v1/tasks/{id}/runs', byId(id));
const taskRun = (runId: string, k = key) => t.api(k).GET('/api/v1/tasks/runs/{runId}', { params: { path: { runId } } });
const pause = (agent: string) => t.api(key).POST('/api/v1/agents/{id}/pause', byId(agent));

describe('create', () => {
  it('creates a one-time task, queued at once, with every field', async () => {
    const res = await create({
      name: 'Report',
      description: 'Write the report',
      agentId,
      teamId: 'team-a',
      input: { quarter: 'Q3' },
      dueAt: '2030-01-01T00:00:00Z',
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    const created = res.data!;
    expect(created).toMatchObject({
      name: 'Report',
      description: 'Write the report',
      agentId,
      teamId: 'team-a',
      appId: 'ops',
      type: 'one_time',
      schedule: null,
      timezone: null,
      priority: 'medium',
      dueAt: '2030-01-01T00:00:00.000Z',
      input: { quarter: 'Q3' },
      status: 'pending',
      requiresApproval: false,
      misfirePolicy: 'skip',
      overlapPolicy: 'skip',
      retryPolicy: { maxAttempts: 1, backoffSeconds: 10 },
      trigger: null,
      approval: null,
      lastRunAt: null,
      lastRunId: null,
      lastError: null,
    });
    // Queued now: its next run is due now.
    expect(Date.parse(created.nextRunAt!)).toBeLessThanOrEqual(Date.now());
    expect(created.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(created.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);

    expect(await dispatch()).toBeGreaterThanOrEqual(1);
    const done = (await get(created.id)).data!;
    expect(done).toMatchObject({ status: 'completed', nextRunAt: null, lastError: null });
    expect(done.lastRunAt).toBeTruthy();
    expect(done.runs).toHaveLength(1);
    expect(done.runs[0]).toMatchObject({ status: 'completed', kind: 'task', taskId: created.id, agentId });
    // The description is the message; the input reaches the model as JSON.
    expect(done.output).toBe('Write the report\n\n{"quarter":"Q3"}');
    expect(done.lastRunId).toBe(done.runs[0].id);
  });

  it('creates a scheduled task with its first cron time', async () => {
    const res = await create({
      name: 'Daily',
      description: 'daily digest',
      agentId,
      type: 'scheduled',
      schedule: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
      priority: 'high',
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(res.data).toMatchObject({
      type: 'scheduled',
      schedule: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
      priority: 'high',
      status: 'pending',
    });
    const next = new Date(res.data!.nextRunAt!);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Paris',
      hour: '2-digit',
      minute: '2-digit',
      weekday: 'short',
    }).format(next);
    expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
  });

  it('defaults the scheduled time zone to UTC', async () => {
    const res = await create({ name: 'Hourly', description: 'x', agentId, type: 'scheduled', schedule: '0 */2 * * *' });
    expect(res.response.status).toBe(201);
    expect(res.data!.timezone).toBe('UTC');
    expect(res.data!.nextRunAt).toMatch(/T(0|1|2)[02468]:00:00\.000Z$/);
  });

  it('validates the body, every field error with its path', async () => {
    const cases: [Record<string, unknown>, string, RegExp?][] = [
      [{ description: 'x', agentId }, 'body.name'],
      [{ name: 'x', agentId }, 'body.description'],
      [{ name: 'x', description: 'x' }, 'body.agentId'],
      [{ name: 'x', description: 'x', agentId, type: 'weekly' }, 'body.type'],
      [{ name: 'x', description: 'x', agentId, priority: 'urgent' }, 'body.priority'],
      [{ name: 'x', description: 'x', agentId, dueAt: 'tomorrow' }, 'body.dueAt'],
      [{ name: 'x', description: 'x', agentId, input: [1, 2] }, 'body.input'],
      [{ name: 'x', description: 'x', agentId, input: 'text' }, 'body.input'],
      [{ name: 'x', description: 'x', agentId, colour: 'red' }, 'body.colour', /not a known field/],
      [{ name: 'x', description: 'x', agentId, requiresApproval: 'yes' }, 'body.requiresApproval'],
      [{ name: 'x', description: 'x', agentId, retryPolicy: { maxAttempts: 0 } }, 'body.retryPolicy.maxAttempts'],
      [{ name: 'x', description: 'x', agentId, retryPolicy: { maxAttempts: 11 } }, 'body.retryPolicy.maxAttempts'],
      [{ name: 'x', description: 'x', agentId, retryPolicy: { tries: 2 } }, 'body.retryPolicy.tries'],
      [{ name: 'x', description: 'x', agentId, type: 'scheduled' }, 'body.schedule', /required for scheduled/],
      [{ name: 'x', description: 'x', agentId, type: 'scheduled', schedule: '0 9 * *' }, 'body.schedule', /five fields/],
      [{ name: 'x', description: 'x', agentId, type: 'scheduled', schedule: '0 0 9 * * 1' }, 'body.schedule', /five fields/],
      [{ name: 'x', description: 'x', agentId, type: 'scheduled', schedule: '61 * * * *' }, 'body.schedule', /not a valid cron/],
      [{ name: 'x', description: 'x', agentId, type: 'scheduled', schedule: 'every day' }, 'body.schedule', /five fields/],
      [{ name: 'x', description: 'x', agentId, type: 'scheduled', schedule: 'a b c d e' }, 'body.schedule', /not a valid cron/],
      [{ name: 'x', description: 'x', agentId, type: 'scheduled', schedule: '0 0 30 2 *' }, 'body.schedule', /never fires/],
      [
        { name: 'x', description: 'x', agentId, type: 'scheduled', schedule: '0 9 * * *', timezone: 'Mars/Olympus' },
        'body.timezone',
        /IANA/,
      ],
      [{ name: 'x', description: 'x', agentId, type: 'scheduled', schedule: '0 9 * * *', misfirePolicy: 'always' }, 'body.misfirePolicy'],
      [{ name: 'x', description: 'x', agentId, type: 'scheduled', schedule: '0 9 * * *', overlapPolicy: 'replace' }, 'body.overlapPolicy'],
      [
        { name: 'x', description: 'x', agentId, type: 'scheduled', schedule: '0 9 * * *', dueAt: '2030-01-01T00:00:00Z' },
        'body.dueAt',
        /one-time/,
      ],
      [{ name: 'x', description: 'x', agentId, schedule: '0 9 * * *' }, 'body.schedule', /scheduled tasks only/],
      [{ name: 'x', description: 'x', agentId, timezone: 'UTC' }, 'body.timezone', /scheduled tasks only/],
      [{ name: 'x', description: 'x', agentId, misfirePolicy: 'skip' }, 'body.misfirePolicy', /scheduled tasks only/],
      [{ name: 'x', description: 'x', agentId, overlapPolicy: 'allow' }, 'body.overlapPolicy', /scheduled and triggered/],
      [{ name: 'x', description: 'x', agentId, type: 'triggered' }, 'body.trigger', /required for triggered/],
      [{ name: 'x', description: 'x', agentId, trigger: { type: 'webhook' } }, 'body.trigger', /triggered tasks only/],
      [
        { name: 'x', description: 'x', agentId, type: 'triggered', trigger: { type: 'webhook', event: 'task.completed' } },
        'body.trigger.event',
      ],
      [
        { name: 'x', description: 'x', agentId, type: 'triggered', trigger: { event: 'task.completed' } },
        'body.trigger.taskId',
        /required/,
      ],
      [
        { name: 'x', description: 'x', agentId, type: 'triggered', trigger: { event: 'task.started', taskId: agentId } },
        'body.trigger.event',
      ],
      [
        { name: 'x', description: 'x', agentId, type: 'triggered', trigger: { event: 'task.completed', taskId: agentId } },
        'body.trigger.taskId',
        /names no task/,
      ],
    ];
    // Bodies the types forbid (and some they allow): sent raw.
    for (const [body, path, message] of cases) {
      const res = await t.raw('POST', '/api/v1/tasks', { key, body });
      expectProblem(res, 400, 'validation_failed');
      const hit = res.body.errors.find((e: { path: string }) => e.path === path);
      expect(hit, `${JSON.stringify(body)} -> ${res.text}`).toBeTruthy();
      if (message) expect(hit.message).toMatch(message);
    }
  });

  it('accepts the spec cron shapes', async () => {
    for (const schedule of ['0 9 * * 1-5', '0 */2 * * *', '*/30 * * * *', '0 0 1 * *']) {
      const res = await create({ name: schedule, description: 'x', agentId, type: 'scheduled', schedule });
      expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    }
  });

  it('needs an agent of the tenant that can run here', async () => {
    expectProblem(await create({ name: 'x', description: 'x', agentId: '01900000-0000-7000-8000-000000000000' }), 404, 'not_found');
    const foreign = (await t.agent(otherKey, { appId: 'ops' })).id;
    expectProblem(await create({ name: 'x', description: 'x', agentId: foreign }), 404, 'not_found');
    const external = (await t.agent(key, { appId: 'ops', hosting: 'external' })).id;
    expectProblem(await create({ name: 'x', description: 'x', agentId: external }), 409, 'agent_not_executable');
    const paused = (await t.agent(key, { appId: 'ops', name: 'paused' })).id;
    await pause(paused);
    expectProblem(await create({ name: 'x', description: 'x', agentId: paused }), 409, 'agent_paused');
  });

  it('checks permissions and credentials', async () => {
    const reader = await t.services.tenancy.createKey(
      tenantId,
      { name: 'reader', permissions: ['agents:read'] },
      { type: 'cli', id: null },
    );
    const task = await createTask(t, key, { agentId });
    expectProblem(await create({ name: 'x', description: 'x', agentId }, reader.secret), 403, 'forbidden');
    const actions = [
      () => run(task.id, undefined, reader.secret),
      () => cancel(task.id, reader.secret),
      () => retry(task.id, reader.secret),
      () => approve(task.id, reader.secret),
      () => reject(task.id, reader.secret),
    ];
    for (const action of actions) expectProblem(await action(), 403, 'forbidden');
    expectProblem(await remove(task.id, reader.secret), 403, 'forbidden');
    expect((await get(task.id, reader.secret)).response.status).toBe(200);
    expect((await t.api(reader.secret).GET('/api/v1/tasks')).response.status).toBe(200);
    expectProblem(await t.api().GET('/api/v1/tasks'), 401, 'missing_credentials');
    const none = await t.services.tenancy.createKey(tenantId, { name: 'none', permissions: ['settings:read'] }, { type: 'cli', id: null });
    expectProblem(await t.api(none.secret).GET('/api/v1/tasks'), 403, 'forbidden');
  });
});

describe('list and get', () => {
  it('lists with filters and paging, newest first, never another tenant’s', async () => {
    const other = (await t.agent(key, { appId: 'ops', name: 'Other' })).id;
    const a = await createTask(t, key, { agentId: other, name: 'L1', teamId: 'blue' });
    const b = await createTask(t, key, { agentId: other, name: 'L2', type: 'scheduled', schedule: '*/30 * * * *' });
    const c = await createTask(t, key, { agentId: other, name: 'L3', requiresApproval: true, teamId: 'blue' });
    const list = await t.api(key).GET('/api/v1/tasks', { params: { query: { agentId: other } } });
    expect(list.response.status).toBe(200);
    expect(list.data).toMatchObject({ total: 3, page: 1, limit: 20 });
    expect(list.data!.tasks.map((x) => x.id)).toEqual([c.id, b.id, a.id]);
    expect(Object.keys(list.data!.tasks[0]).sort()).toEqual(
      [
        'agentId',
        'appId',
        'createdAt',
        'description',
        'dueAt',
        'id',
        'lastRunAt',
        'name',
        'nextRunAt',
        'priority',
        'schedule',
        'status',
        'teamId',
        'type',
      ].sort(),
    );
    const ids = async (query: TaskQuery) =>
      (await t.api(key).GET('/api/v1/tasks', { params: { query: { agentId: other, ...query } } })).data!.tasks.map((x) => x.id);
    expect(await ids({ teamId: 'blue' })).toEqual([c.id, a.id]);
    expect(await ids({ type: 'scheduled' })).toEqual([b.id]);
    expect(await ids({ status: 'awaiting_approval' })).toEqual([c.id]);
    expect(await ids({ status: 'pending' })).toEqual([b.id, a.id]);
    expect(await ids({ limit: 1, page: 2 })).toEqual([b.id]);
    expect((await t.api(otherKey).GET('/api/v1/tasks', { params: { query: { agentId: other } } })).data!.total).toBe(0);
    expectProblem(await t.api(key).GET('/api/v1/tasks', { params: { query: { limit: 101 } } }), 400, 'validation_failed');
    expectProblem(await t.api(key).GET('/api/v1/tasks', { params: { query: { page: 0 } } }), 400, 'validation_failed');
    // Values outside the types' enums: sent raw.
    expectProblem(await t.raw('GET', '/api/v1/tasks?status=done', { key }), 400, 'validation_failed');
    expectProblem(await t.raw('GET', '/api/v1/tasks?type=cron', { key }), 400, 'validation_failed');
  });

  it('answers 404 for unknown tasks and other tenants’ tasks', async () => {
    const task = await createTask(t, key, { agentId });
    for (const k of [otherKey]) {
      expectProblem(await get(task.id, k), 404, 'not_found');
      expectProblem(await runsOf(task.id, k), 404, 'not_found');
      expectProblem(await t.api(k).GET('/api/v1/tasks/{id}/fires', byId(task.id)), 404, 'not_found');
      expectProblem(await run(task.id, undefined, k), 404, 'not_found');
      expectProblem(await cancel(task.id, k), 404, 'not_found');
      expectProblem(await remove(task.id, k), 404, 'not_found');
    }
    expectProblem(await get('01900000-0000-7000-8000-000000000000'), 404, 'not_found');
  });
});

describe('run', () => {
  it('starts a run now: 202 with runId, running, startedAt; the input override is merged', async () => {
    const task = await createTask(t, key, {
      agentId,
      type: 'scheduled',
      schedule: '0 0 1 * *',
      description: 'Summarise',
      input: { a: 1, b: 2 },
    });
    const res = await run(task.id, { b: 3 });
    expect(res.response.status, JSON.stringify(res.error)).toBe(202);
    const started = res.data!;
    expect(started).toMatchObject({ runId: expect.any(String), status: 'running', taskId: task.id, conversationId: expect.any(String) });
    expect(started.startedAt).toMatch(/Z$/);
    const done = await taskIn(t, key, task.id, ['completed']);
    expect(done.output).toBe('Summarise\n\n{"a":1,"b":3}');
    expect(done.lastRunId).toBe(started.runId);
    expect(done.lastRunAt).toBe(started.startedAt);
    // A scheduled task keeps its cron time.
    expect(done.nextRunAt).toBe(task.nextRunAt);

    const runs = await runsOf(task.id);
    expect(runs.response.status).toBe(200);
    expect(runs.data).toMatchObject({ total: 1, page: 1, limit: 20 });
    expect(runs.data!.runs[0]).toMatchObject({
      id: started.runId,
      runId: started.runId,
      status: 'completed',
      output: done.output,
      cost: 0,
    });
    expect(runs.data!.runs[0].duration).toBeGreaterThanOrEqual(0);
    expect(runs.data!.runs[0].tokenUsage).toEqual({ inputTokens: expect.any(Number), outputTokens: expect.any(Number) });

    const details = await taskRun(started.runId!);
    expect(details.response.status).toBe(200);
    expect(details.data).toMatchObject({
      id: started.runId,
      taskId: task.id,
      agentId,
      conversationId: started.conversationId,
      error: null,
      toolCalls: [],
      status: 'completed',
    });
    expect(details.data!.steps).toHaveLength(1);
    expectProblem(await taskRun(started.runId!, otherKey), 404, 'not_found');
  });

  it('takes over the queued work of a one-time task instead of leaving it to run twice', async () => {
    const task = await createTask(t, key, { agentId });
    expect((await run(task.id)).response.status).toBe(202);
    await taskIn(t, key, task.id, ['completed']);
    await dispatch();
    expect((await runsOf(task.id)).data!.total).toBe(1);
  });

  it('records tool calls and steps on the run', async () => {
    const task = await createTask(t, key, { agentId, description: 'check\n/tool no_such_tool {}' });
    const res = await run(task.id);
    await taskIn(t, key, task.id, ['completed', 'failed']);
    const details = (await taskRun(res.data!.runId!)).data!;
    expect(details.toolCalls.length + details.steps.length).toBeGreaterThan(0);
  });

  it('refuses paused agents, tasks awaiting approval and approval tasks', async () => {
    const paused = (await t.agent(key, { appId: 'ops', name: 'sleepy' })).id;
    const task = await createTask(t, key, { agentId: paused });
    await pause(paused);
    expectProblem(await run(task.id), 409, 'agent_paused');
    const gated = await createTask(t, key, { agentId, requiresApproval: true });
    expectProblem(await run(gated.id), 409, 'task_awaiting_approval');
    // Bodies the types forbid: sent raw.
    expectProblem(await t.raw('POST', `/api/v1/tasks/${task.id}/run`, { key, body: { input: 'x' } }), 400, 'validation_failed');
    expectProblem(await t.raw('POST', `/api/v1/tasks/${task.id}/run`, { key, body: { inputs: {} } }), 400, 'validation_failed');
  });

  it('fails a dispatched task whose agent is paused, and retry runs it once resumed', async () => {
    const agent = (await t.agent(key, { appId: 'ops', name: 'napper' })).id;
    const task = await createTask(t, key, { agentId: agent });
    await pause(agent);
    await dispatch();
    const failed = await get(task.id);
    expect(failed.data).toMatchObject({ status: 'failed', lastError: { code: 'agent_paused' } });
    expectProblem(await retry(task.id), 409, 'agent_paused');
    await t.api(key).POST('/api/v1/agents/{id}/resume', byId(agent));
    const retried = await retry(task.id);
    expect(retried.response.status).toBe(202);
    expect(retried.data!.status).toBe('running');
    await taskIn(t, key, task.id, ['completed']);
  });
});

describe('cancel', () => {
  it('cancels a pending task: its queued work never runs', async () => {
    const task = await createTask(t, key, { agentId });
    const res = await cancel(task.id);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data).toMatchObject({ id: task.id, status: 'cancelled', nextRunAt: null });
    await dispatch();
    expect((await get(task.id)).data!.runs).toHaveLength(0);
    expectProblem(await cancel(task.id), 409, 'task_not_pending_or_running');
  });

  it('cancels a running task: the run stops and both end cancelled', async () => {
    const task = await createTask(t, key, {
      agentId,
      type: 'triggered',
      trigger: { type: 'webhook' },
      description: '/delay 200\none two three four five six seven eight nine ten',
    });
    const runId = (await run(task.id)).data!.runId!;
    await waitFor(
      async () => (await t.db.kysely.selectFrom('run_events').select('seq').where('run_id', '=', runId).execute()).length > 0,
      5000,
      'first tokens',
    );
    const res = await cancel(task.id);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.status).toBe('cancelled');
    const details = await taskRun(runId);
    expect(details.data).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    expect(details.data!.output.length).toBeLessThan('one two three four five six seven eight nine ten'.length);
  });

  it('refuses completed, failed and awaiting tasks', async () => {
    const task = await createTask(t, key, { agentId });
    await dispatch();
    await taskIn(t, key, task.id, ['completed']);
    expectProblem(await cancel(task.id), 409, 'task_not_pending_or_running');
    const gated = await createTask(t, key, { agentId, requiresApproval: true });
    expectProblem(await cancel(gated.id), 409, 'task_not_pending_or_running');
  });
});

describe('queued work (queuedAt)', () => {
  it('a completed task with queued work shows when it may start and can be cancelled; a cron time alone is not queued work', async () => {
    const task = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' } });
    expect(task.queuedAt).toBeNull();
    expect((await run(task.id)).response.status).toBe(202);
    await taskIn(t, key, task.id, ['completed']);
    // A delivery queues work; no worker runs here, so it waits and the task stays completed.
    const body = '{"orderId":1}';
    const delivered = await deliverWebhook(t, task.id, hookSecret(task), body);
    expect(delivered.status, delivered.text).toBe(202);
    const queued = (await get(task.id)).data!;
    expect(queued).toMatchObject({ status: 'completed', queuedAt: expect.stringMatching(/Z$/) });
    expect(queued.nextRunAt).toBe(queued.queuedAt);
    const cancelled = await cancel(task.id);
    expect(cancelled.response.status, JSON.stringify(cancelled.error)).toBe(200);
    expect(cancelled.data).toMatchObject({ status: 'cancelled', queuedAt: null, nextRunAt: null });

    // A scheduled task's next cron time is nextRunAt, not queued work: once it ended, cancel is refused.
    const cron = await createTask(t, key, { agentId, type: 'scheduled', schedule: '0 9 * * *' });
    expect(cron.nextRunAt).not.toBeNull();
    expect(cron.queuedAt).toBeNull();
    expect((await get(cron.id)).data!.queuedAt).toBeNull();
  });
});

describe('retry', () => {
  it('only a failed task, else 409 task_not_failed', async () => {
    const task = await createTask(t, key, { agentId });
    expectProblem(await retry(task.id), 409, 'task_not_failed');
    await dispatch();
    await taskIn(t, key, task.id, ['completed']);
    expectProblem(await retry(task.id), 409, 'task_not_failed');
  });

  it('re-runs a failed task with the same configuration and input', async () => {
    const task = await createTask(t, key, { agentId, description: 'broken\n/fail upstream timeout' });
    const first = (await run(task.id, { attempt: 'x' })).data!;
    const failed = await taskIn(t, key, task.id, ['failed']);
    expect(failed.lastError).toEqual({ code: 'model_error', message: 'upstream timeout' });
    const firstRun = await taskRun(first.runId!);
    expect(firstRun.data).toMatchObject({ status: 'failed', error: { code: 'model_error', message: 'upstream timeout' } });
    const res = await retry(task.id);
    expect(res.response.status, JSON.stringify(res.error)).toBe(202);
    expect(res.data).toMatchObject({ status: 'running', runId: expect.any(String), startedAt: expect.any(String) });
    expect(res.data!.runId).not.toBe(first.runId);
    await taskIn(t, key, task.id, ['failed']);
    const runs = (await runsOf(task.id)).data!.runs;
    expect(runs.map((r) => r.id)).toEqual([res.data!.runId, first.runId]);
  });
});

describe('approval', () => {
  it('awaiting_approval until approved, then queued and run; who and when are recorded', async () => {
    const task = await createTask(t, key, { agentId, requiresApproval: true });
    expect(task).toMatchObject({ status: 'awaiting_approval', nextRunAt: null, requiresApproval: true });
    expect(task.approval).toMatchObject({ action: null, decision: null, decidedBy: null, requestedBy: { type: 'api_key' } });
    await dispatch();
    expect((await get(task.id)).data!.status).toBe('awaiting_approval');

    const pendingApproval = (k: string) => t.api(k).GET('/api/v1/tasks/pending-approval');
    const pending = await pendingApproval(key);
    expect(pending.response.status).toBe(200);
    expect(pending.data!.tasks.map((x) => x.id)).toContain(task.id);
    expect(pending.data!.total).toBe(pending.data!.tasks.length);
    expect((await pendingApproval(otherKey)).data!.total).toBe(0);

    const res = await approve(task.id);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.status).toBe('pending');
    expect(res.data!.approval).toMatchObject({
      decision: 'approved',
      decidedBy: { type: 'api_key', id: expect.any(String) },
      decidedAt: expect.any(String),
    });
    expect(res.data!.nextRunAt).toBeTruthy();
    expectProblem(await approve(task.id), 409, 'task_not_awaiting_approval');
    expectProblem(await reject(task.id), 409, 'task_not_awaiting_approval');
    await dispatch();
    await taskIn(t, key, task.id, ['completed']);
    expect((await pendingApproval(key)).data!.tasks.map((x) => x.id)).not.toContain(task.id);
  });

  it('reject cancels; approve and reject refuse other states', async () => {
    const task = await createTask(t, key, { agentId, requiresApproval: true });
    const res = await reject(task.id);
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({ status: 'cancelled', approval: { decision: 'rejected', decidedBy: { type: 'api_key' } } });
    await dispatch();
    expect((await get(task.id)).data!.runs).toHaveLength(0);
    const plain = await createTask(t, key, { agentId });
    expectProblem(await approve(plain.id), 409, 'task_not_awaiting_approval');
    expectProblem(await reject(plain.id), 409, 'task_not_awaiting_approval');
  });

  it('a scheduled task gets its first cron time only once approved', async () => {
    const task = await createTask(t, key, { agentId, type: 'scheduled', schedule: '*/30 * * * *', requiresApproval: true });
    expect(task.nextRunAt).toBeNull();
    const approved = await approve(task.id);
    expect(approved.data!.nextRunAt).toMatch(/:(00|30):00\.000Z$/);
  });
});

describe('delete', () => {
  it('204; gone from reads and lists, runs stay readable, queued work never runs', async () => {
    const task = await createTask(t, key, { agentId });
    const runId = (await run(task.id)).data!.runId!;
    await taskIn(t, key, task.id, ['completed']);
    const queued = await createTask(t, key, { agentId });
    // Raw: the fetch Response of the typed client cannot carry a 204's body, and the test checks it is empty.
    const res = await t.raw('DELETE', `/api/v1/tasks/${task.id}`, { key });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await remove(queued.id)).response.status).toBe(204);
    expectProblem(await get(task.id), 404, 'not_found');
    expectProblem(await remove(task.id), 404, 'not_found');
    const listed = (await t.api(key).GET('/api/v1/tasks', { params: { query: { limit: 100 } } })).data!.tasks;
    expect(listed.map((x) => x.id)).not.toContain(task.id);
    expect((await taskRun(runId)).data!.status).toBe('completed');
    expect((await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).response.status).toBe(200);
    await dispatch();
    const runs = await t.db.kysely.selectFrom('runs').select('id').where('task_id', '=', queued.id).execute();
    expect(runs).toHaveLength(0);
  });

  it('stops a scheduled task and a running run', async () => {
    const task = await createTask(t, key, {
      agentId,
      type: 'scheduled',
      schedule: '* * * * *',
      description: '/delay 300\na b c d e f g h',
    });
    const runId = (await run(task.id)).data!.runId!;
    expect((await remove(task.id)).response.status).toBe(204);
    const details = await taskRun(runId);
    expect(details.data!.status).toBe('cancelled');
    const row = await t.db.kysely
      .selectFrom('tasks')
      .select(['next_run_at', 'deleted_at'])
      .where('id', '=', task.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ next_run_at: null, deleted_at: expect.any(String) });
  });
});

describe('audit', () => {
  it('writes an audit event for every mutation', async () => {
    const task = await createTask(t, key, { agentId, requiresApproval: true });
    await approve(task.id);
    await run(task.id);
    await taskIn(t, key, task.id, ['completed']);
    const gated = await createTask(t, key, { agentId, requiresApproval: true });
    await reject(gated.id);
    const queued = await createTask(t, key, { agentId });
    await cancel(queued.id);
    await remove(task.id);
    const failing = await createTask(t, key, { agentId, description: '/fail no' });
    await run(failing.id);
    await taskIn(t, key, failing.id, ['failed']);
    await retry(failing.id);
    const events = (await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceType: 'task', limit: 100 } } })).data!.events;
    const actions = (id: string) =>
      events
        .filter((e) => e.resourceId === id)
        .map((e) => e.action)
        .sort();
    expect(actions(task.id)).toEqual(['task.approved', 'task.created', 'task.deleted', 'task.run_requested']);
    expect(actions(gated.id)).toEqual(['task.created', 'task.rejected']);
    expect(actions(queued.id)).toEqual(['task.cancelled', 'task.created']);
    expect(actions(failing.id)).toEqual(['task.created', 'task.retried', 'task.run_requested']);
  });
});

describe('OpenAPI', () => {
  it('documents the task routes', async () => {
    // Raw: the document itself is not one of the typed operations.
    const doc = (await t.raw('GET', '/openapi.json')).body;
    for (const path of [
      '/api/v1/tasks',
      '/api/v1/tasks/{id}',
      '/api/v1/tasks/{id}/run',
      '/api/v1/tasks/pending-approval',
      '/api/v1/tasks/runs/{runId}',
      '/api/v1/hooks/{taskId}',
    ]) {
      expect(doc.paths[path], path).toBeTruthy();
    }
    // Public: an empty security list (the webhook's own secret is its authentication).
    expect(doc.paths['/api/v1/hooks/{taskId}'].post.security).toEqual([]);
    expect(doc.paths['/api/v1/tasks'].post.security).toEqual([{ bearerAuth: [] }]);
  });
});
