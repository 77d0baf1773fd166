import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { createTask, deliverWebhook, taskIn, waitFor } from './helpers.js';

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

const get = (id: string) => t.request('GET', `/api/v1/tasks/${id}`, { key });
const post = (path: string, body?: unknown, k = key) => t.request('POST', path, { key: k, body });

describe('create', () => {
  it('creates a one-time task, queued at once, with every field', async () => {
    const res = await post('/api/v1/tasks', {
      name: 'Report',
      description: 'Write the report',
      agentId,
      teamId: 'team-a',
      input: { quarter: 'Q3' },
      dueAt: '2030-01-01T00:00:00Z',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
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
    expect(Date.parse(res.body.nextRunAt)).toBeLessThanOrEqual(Date.now());
    expect(res.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);

    expect(await dispatch()).toBeGreaterThanOrEqual(1);
    const done = await get(res.body.id);
    expect(done.body).toMatchObject({ status: 'completed', nextRunAt: null, lastError: null });
    expect(done.body.lastRunAt).toBeTruthy();
    expect(done.body.runs).toHaveLength(1);
    expect(done.body.runs[0]).toMatchObject({ status: 'completed', kind: 'task', taskId: res.body.id, agentId });
    // The description is the message; the input reaches the model as JSON.
    expect(done.body.output).toBe('Write the report\n\n{"quarter":"Q3"}');
    expect(done.body.lastRunId).toBe(done.body.runs[0].id);
  });

  it('creates a scheduled task with its first cron time', async () => {
    const res = await post('/api/v1/tasks', {
      name: 'Daily',
      description: 'daily digest',
      agentId,
      type: 'scheduled',
      schedule: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
      priority: 'high',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      type: 'scheduled',
      schedule: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
      priority: 'high',
      status: 'pending',
    });
    const next = new Date(res.body.nextRunAt);
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
    const res = await post('/api/v1/tasks', { name: 'Hourly', description: 'x', agentId, type: 'scheduled', schedule: '0 */2 * * *' });
    expect(res.status).toBe(201);
    expect(res.body.timezone).toBe('UTC');
    expect(res.body.nextRunAt).toMatch(/T(0|1|2)[02468]:00:00\.000Z$/);
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
    for (const [body, path, message] of cases) {
      const res = await post('/api/v1/tasks', body);
      expectProblem(res, 400, 'validation_failed');
      const hit = res.body.errors.find((e: { path: string }) => e.path === path);
      expect(hit, `${JSON.stringify(body)} -> ${res.text}`).toBeTruthy();
      if (message) expect(hit.message).toMatch(message);
    }
  });

  it('accepts the spec cron shapes', async () => {
    for (const schedule of ['0 9 * * 1-5', '0 */2 * * *', '*/30 * * * *', '0 0 1 * *']) {
      const res = await post('/api/v1/tasks', { name: schedule, description: 'x', agentId, type: 'scheduled', schedule });
      expect(res.status, res.text).toBe(201);
    }
  });

  it('needs an agent of the tenant that can run here', async () => {
    expectProblem(
      await post('/api/v1/tasks', { name: 'x', description: 'x', agentId: '01900000-0000-7000-8000-000000000000' }),
      404,
      'not_found',
    );
    const foreign = (await t.agent(otherKey, { appId: 'ops' })).id;
    expectProblem(await post('/api/v1/tasks', { name: 'x', description: 'x', agentId: foreign }), 404, 'not_found');
    const external = (await t.agent(key, { appId: 'ops', hosting: 'external' })).id;
    expectProblem(await post('/api/v1/tasks', { name: 'x', description: 'x', agentId: external }), 409, 'agent_not_executable');
    const paused = (await t.agent(key, { appId: 'ops', name: 'paused' })).id;
    await post(`/api/v1/agents/${paused}/pause`);
    expectProblem(await post('/api/v1/tasks', { name: 'x', description: 'x', agentId: paused }), 409, 'agent_paused');
  });

  it('checks permissions and credentials', async () => {
    const reader = await t.services.tenancy.createKey(
      tenantId,
      { name: 'reader', permissions: ['agents:read'] },
      { type: 'cli', id: null },
    );
    const task = await createTask(t, key, { agentId });
    expectProblem(await post('/api/v1/tasks', { name: 'x', description: 'x', agentId }, reader.secret), 403, 'forbidden');
    for (const action of ['run', 'cancel', 'retry', 'approve', 'reject']) {
      expectProblem(await post(`/api/v1/tasks/${task.id}/${action}`, undefined, reader.secret), 403, 'forbidden');
    }
    expectProblem(await t.request('DELETE', `/api/v1/tasks/${task.id}`, { key: reader.secret }), 403, 'forbidden');
    expect((await t.request('GET', `/api/v1/tasks/${task.id}`, { key: reader.secret })).status).toBe(200);
    expect((await t.request('GET', '/api/v1/tasks', { key: reader.secret })).status).toBe(200);
    expectProblem(await t.request('GET', '/api/v1/tasks'), 401, 'missing_credentials');
    const none = await t.services.tenancy.createKey(tenantId, { name: 'none', permissions: ['settings:read'] }, { type: 'cli', id: null });
    expectProblem(await t.request('GET', '/api/v1/tasks', { key: none.secret }), 403, 'forbidden');
  });
});

describe('list and get', () => {
  it('lists with filters and paging, newest first, never another tenant’s', async () => {
    const other = (await t.agent(key, { appId: 'ops', name: 'Other' })).id;
    const a = await createTask(t, key, { agentId: other, name: 'L1', teamId: 'blue' });
    const b = await createTask(t, key, { agentId: other, name: 'L2', type: 'scheduled', schedule: '*/30 * * * *' });
    const c = await createTask(t, key, { agentId: other, name: 'L3', requiresApproval: true, teamId: 'blue' });
    const list = await t.request('GET', `/api/v1/tasks?agentId=${other}`, { key });
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 3, page: 1, limit: 20 });
    expect(list.body.tasks.map((x: { id: string }) => x.id)).toEqual([c.id, b.id, a.id]);
    expect(Object.keys(list.body.tasks[0]).sort()).toEqual(
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
    const ids = async (q: string) =>
      (await t.request('GET', `/api/v1/tasks?agentId=${other}&${q}`, { key })).body.tasks.map((x: { id: string }) => x.id);
    expect(await ids('teamId=blue')).toEqual([c.id, a.id]);
    expect(await ids('type=scheduled')).toEqual([b.id]);
    expect(await ids('status=awaiting_approval')).toEqual([c.id]);
    expect(await ids('status=pending')).toEqual([b.id, a.id]);
    expect(await ids('limit=1&page=2')).toEqual([b.id]);
    expect((await t.request('GET', `/api/v1/tasks?agentId=${other}`, { key: otherKey })).body.total).toBe(0);
    expectProblem(await t.request('GET', '/api/v1/tasks?limit=101', { key }), 400, 'validation_failed');
    expectProblem(await t.request('GET', '/api/v1/tasks?page=0', { key }), 400, 'validation_failed');
    expectProblem(await t.request('GET', '/api/v1/tasks?status=done', { key }), 400, 'validation_failed');
    expectProblem(await t.request('GET', '/api/v1/tasks?type=cron', { key }), 400, 'validation_failed');
  });

  it('answers 404 for unknown tasks and other tenants’ tasks', async () => {
    const task = await createTask(t, key, { agentId });
    for (const k of [otherKey]) {
      expectProblem(await t.request('GET', `/api/v1/tasks/${task.id}`, { key: k }), 404, 'not_found');
      expectProblem(await t.request('GET', `/api/v1/tasks/${task.id}/runs`, { key: k }), 404, 'not_found');
      expectProblem(await t.request('GET', `/api/v1/tasks/${task.id}/fires`, { key: k }), 404, 'not_found');
      expectProblem(await post(`/api/v1/tasks/${task.id}/run`, undefined, k), 404, 'not_found');
      expectProblem(await post(`/api/v1/tasks/${task.id}/cancel`, undefined, k), 404, 'not_found');
      expectProblem(await t.request('DELETE', `/api/v1/tasks/${task.id}`, { key: k }), 404, 'not_found');
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
    const res = await post(`/api/v1/tasks/${task.id}/run`, { input: { b: 3 } });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ runId: expect.any(String), status: 'running', taskId: task.id, conversationId: expect.any(String) });
    expect(res.body.startedAt).toMatch(/Z$/);
    const done = await taskIn(t, key, task.id, ['completed']);
    expect(done.output).toBe('Summarise\n\n{"a":1,"b":3}');
    expect(done.lastRunId).toBe(res.body.runId);
    expect(done.lastRunAt).toBe(res.body.startedAt);
    // A scheduled task keeps its cron time.
    expect(done.nextRunAt).toBe(task.nextRunAt);

    const runs = await t.request('GET', `/api/v1/tasks/${task.id}/runs`, { key });
    expect(runs.status).toBe(200);
    expect(runs.body).toMatchObject({ total: 1, page: 1, limit: 20 });
    expect(runs.body.runs[0]).toMatchObject({
      id: res.body.runId,
      runId: res.body.runId,
      status: 'completed',
      output: done.output,
      cost: 0,
    });
    expect(runs.body.runs[0].duration).toBeGreaterThanOrEqual(0);
    expect(runs.body.runs[0].tokenUsage).toEqual({ inputTokens: expect.any(Number), outputTokens: expect.any(Number) });

    const details = await t.request('GET', `/api/v1/tasks/runs/${res.body.runId}`, { key });
    expect(details.status).toBe(200);
    expect(details.body).toMatchObject({
      id: res.body.runId,
      taskId: task.id,
      agentId,
      conversationId: res.body.conversationId,
      error: null,
      toolCalls: [],
      status: 'completed',
    });
    expect(details.body.steps).toHaveLength(1);
    expectProblem(await t.request('GET', `/api/v1/tasks/runs/${res.body.runId}`, { key: otherKey }), 404, 'not_found');
  });

  it('takes over the queued work of a one-time task instead of leaving it to run twice', async () => {
    const task = await createTask(t, key, { agentId });
    expect((await post(`/api/v1/tasks/${task.id}/run`)).status).toBe(202);
    await taskIn(t, key, task.id, ['completed']);
    await dispatch();
    expect((await t.request('GET', `/api/v1/tasks/${task.id}/runs`, { key })).body.total).toBe(1);
  });

  it('records tool calls and steps on the run', async () => {
    const task = await createTask(t, key, { agentId, description: 'check\n/tool no_such_tool {}' });
    const res = await post(`/api/v1/tasks/${task.id}/run`);
    await taskIn(t, key, task.id, ['completed', 'failed']);
    const details = await t.request('GET', `/api/v1/tasks/runs/${res.body.runId}`, { key });
    expect(details.body.toolCalls.length + details.body.steps.length).toBeGreaterThan(0);
  });

  it('refuses paused agents, tasks awaiting approval and approval tasks', async () => {
    const paused = (await t.agent(key, { appId: 'ops', name: 'sleepy' })).id;
    const task = await createTask(t, key, { agentId: paused });
    await post(`/api/v1/agents/${paused}/pause`);
    expectProblem(await post(`/api/v1/tasks/${task.id}/run`), 409, 'agent_paused');
    const gated = await createTask(t, key, { agentId, requiresApproval: true });
    expectProblem(await post(`/api/v1/tasks/${gated.id}/run`), 409, 'task_awaiting_approval');
    expectProblem(await post(`/api/v1/tasks/${task.id}/run`, { input: 'x' }), 400, 'validation_failed');
    expectProblem(await post(`/api/v1/tasks/${task.id}/run`, { inputs: {} }), 400, 'validation_failed');
  });

  it('fails a dispatched task whose agent is paused, and retry runs it once resumed', async () => {
    const agent = (await t.agent(key, { appId: 'ops', name: 'napper' })).id;
    const task = await createTask(t, key, { agentId: agent });
    await post(`/api/v1/agents/${agent}/pause`);
    await dispatch();
    const failed = await get(task.id);
    expect(failed.body).toMatchObject({ status: 'failed', lastError: { code: 'agent_paused' } });
    expectProblem(await post(`/api/v1/tasks/${task.id}/retry`), 409, 'agent_paused');
    await post(`/api/v1/agents/${agent}/resume`);
    const retried = await post(`/api/v1/tasks/${task.id}/retry`);
    expect(retried.status).toBe(202);
    expect(retried.body.status).toBe('running');
    await taskIn(t, key, task.id, ['completed']);
  });
});

describe('cancel', () => {
  it('cancels a pending task: its queued work never runs', async () => {
    const task = await createTask(t, key, { agentId });
    const res = await post(`/api/v1/tasks/${task.id}/cancel`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: task.id, status: 'cancelled', nextRunAt: null });
    await dispatch();
    expect((await get(task.id)).body.runs).toHaveLength(0);
    expectProblem(await post(`/api/v1/tasks/${task.id}/cancel`), 409, 'task_not_pending_or_running');
  });

  it('cancels a running task: the run stops and both end cancelled', async () => {
    const task = await createTask(t, key, {
      agentId,
      type: 'triggered',
      trigger: { type: 'webhook' },
      description: '/delay 200\none two three four five six seven eight nine ten',
    });
    const run = await post(`/api/v1/tasks/${task.id}/run`);
    await waitFor(
      async () => (await t.db.kysely.selectFrom('run_events').select('seq').where('run_id', '=', run.body.runId).execute()).length > 0,
      5000,
      'first tokens',
    );
    const res = await post(`/api/v1/tasks/${task.id}/cancel`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('cancelled');
    const details = await t.request('GET', `/api/v1/tasks/runs/${run.body.runId}`, { key });
    expect(details.body).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    expect(details.body.output.length).toBeLessThan('one two three four five six seven eight nine ten'.length);
  });

  it('refuses completed, failed and awaiting tasks', async () => {
    const task = await createTask(t, key, { agentId });
    await dispatch();
    await taskIn(t, key, task.id, ['completed']);
    expectProblem(await post(`/api/v1/tasks/${task.id}/cancel`), 409, 'task_not_pending_or_running');
    const gated = await createTask(t, key, { agentId, requiresApproval: true });
    expectProblem(await post(`/api/v1/tasks/${gated.id}/cancel`), 409, 'task_not_pending_or_running');
  });
});

describe('queued work (queuedAt)', () => {
  it('a completed task with queued work shows when it may start and can be cancelled; a cron time alone is not queued work', async () => {
    const task = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' } });
    expect(task.queuedAt).toBeNull();
    expect((await post(`/api/v1/tasks/${task.id}/run`)).status).toBe(202);
    await taskIn(t, key, task.id, ['completed']);
    // A delivery queues work; no worker runs here, so it waits and the task stays completed.
    const body = '{"orderId":1}';
    const delivered = await deliverWebhook(t, task.id, task.trigger.secret, body);
    expect(delivered.status, delivered.text).toBe(202);
    const queued = await get(task.id);
    expect(queued.body).toMatchObject({ status: 'completed', queuedAt: expect.stringMatching(/Z$/) });
    expect(queued.body.nextRunAt).toBe(queued.body.queuedAt);
    const cancelled = await post(`/api/v1/tasks/${task.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', queuedAt: null, nextRunAt: null });

    // A scheduled task's next cron time is nextRunAt, not queued work: once it ended, cancel is refused.
    const cron = await createTask(t, key, { agentId, type: 'scheduled', schedule: '0 9 * * *' });
    expect(cron.nextRunAt).not.toBeNull();
    expect(cron.queuedAt).toBeNull();
    expect((await get(cron.id)).body.queuedAt).toBeNull();
  });
});

describe('retry', () => {
  it('only a failed task, else 409 task_not_failed', async () => {
    const task = await createTask(t, key, { agentId });
    expectProblem(await post(`/api/v1/tasks/${task.id}/retry`), 409, 'task_not_failed');
    await dispatch();
    await taskIn(t, key, task.id, ['completed']);
    expectProblem(await post(`/api/v1/tasks/${task.id}/retry`), 409, 'task_not_failed');
  });

  it('re-runs a failed task with the same configuration and input', async () => {
    const task = await createTask(t, key, { agentId, description: 'broken\n/fail upstream timeout' });
    const first = await post(`/api/v1/tasks/${task.id}/run`, { input: { attempt: 'x' } });
    const failed = await taskIn(t, key, task.id, ['failed']);
    expect(failed.lastError).toEqual({ code: 'model_error', message: 'upstream timeout' });
    const run = await t.request('GET', `/api/v1/tasks/runs/${first.body.runId}`, { key });
    expect(run.body).toMatchObject({ status: 'failed', error: { code: 'model_error', message: 'upstream timeout' } });
    const res = await post(`/api/v1/tasks/${task.id}/retry`);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ status: 'running', runId: expect.any(String), startedAt: expect.any(String) });
    expect(res.body.runId).not.toBe(first.body.runId);
    await taskIn(t, key, task.id, ['failed']);
    const runs = (await t.request('GET', `/api/v1/tasks/${task.id}/runs`, { key })).body.runs;
    expect(runs.map((r: { id: string }) => r.id)).toEqual([res.body.runId, first.body.runId]);
  });
});

describe('approval', () => {
  it('awaiting_approval until approved, then queued and run; who and when are recorded', async () => {
    const task = await createTask(t, key, { agentId, requiresApproval: true });
    expect(task).toMatchObject({ status: 'awaiting_approval', nextRunAt: null, requiresApproval: true });
    expect(task.approval).toMatchObject({ action: null, decision: null, decidedBy: null, requestedBy: { type: 'api_key' } });
    await dispatch();
    expect((await get(task.id)).body.status).toBe('awaiting_approval');

    const pending = await t.request('GET', '/api/v1/tasks/pending-approval', { key });
    expect(pending.status).toBe(200);
    expect(pending.body.tasks.map((x: { id: string }) => x.id)).toContain(task.id);
    expect(pending.body.total).toBe(pending.body.tasks.length);
    expect((await t.request('GET', '/api/v1/tasks/pending-approval', { key: otherKey })).body.total).toBe(0);

    const res = await post(`/api/v1/tasks/${task.id}/approve`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('pending');
    expect(res.body.approval).toMatchObject({
      decision: 'approved',
      decidedBy: { type: 'api_key', id: expect.any(String) },
      decidedAt: expect.any(String),
    });
    expect(res.body.nextRunAt).toBeTruthy();
    expectProblem(await post(`/api/v1/tasks/${task.id}/approve`), 409, 'task_not_awaiting_approval');
    expectProblem(await post(`/api/v1/tasks/${task.id}/reject`), 409, 'task_not_awaiting_approval');
    await dispatch();
    await taskIn(t, key, task.id, ['completed']);
    expect((await t.request('GET', '/api/v1/tasks/pending-approval', { key })).body.tasks.map((x: { id: string }) => x.id)).not.toContain(
      task.id,
    );
  });

  it('reject cancels; approve and reject refuse other states', async () => {
    const task = await createTask(t, key, { agentId, requiresApproval: true });
    const res = await post(`/api/v1/tasks/${task.id}/reject`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled', approval: { decision: 'rejected', decidedBy: { type: 'api_key' } } });
    await dispatch();
    expect((await get(task.id)).body.runs).toHaveLength(0);
    const plain = await createTask(t, key, { agentId });
    expectProblem(await post(`/api/v1/tasks/${plain.id}/approve`), 409, 'task_not_awaiting_approval');
    expectProblem(await post(`/api/v1/tasks/${plain.id}/reject`), 409, 'task_not_awaiting_approval');
  });

  it('a scheduled task gets its first cron time only once approved', async () => {
    const task = await createTask(t, key, { agentId, type: 'scheduled', schedule: '*/30 * * * *', requiresApproval: true });
    expect(task.nextRunAt).toBeNull();
    const approved = await post(`/api/v1/tasks/${task.id}/approve`);
    expect(approved.body.nextRunAt).toMatch(/:(00|30):00\.000Z$/);
  });
});

describe('delete', () => {
  it('204; gone from reads and lists, runs stay readable, queued work never runs', async () => {
    const task = await createTask(t, key, { agentId });
    const run = await post(`/api/v1/tasks/${task.id}/run`);
    await taskIn(t, key, task.id, ['completed']);
    const queued = await createTask(t, key, { agentId });
    const res = await t.request('DELETE', `/api/v1/tasks/${task.id}`, { key });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await t.request('DELETE', `/api/v1/tasks/${queued.id}`, { key })).status).toBe(204);
    expectProblem(await get(task.id), 404, 'not_found');
    expectProblem(await t.request('DELETE', `/api/v1/tasks/${task.id}`, { key }), 404, 'not_found');
    expect((await t.request('GET', '/api/v1/tasks?limit=100', { key })).body.tasks.map((x: { id: string }) => x.id)).not.toContain(task.id);
    expect((await t.request('GET', `/api/v1/tasks/runs/${run.body.runId}`, { key })).body.status).toBe('completed');
    expect((await t.request('GET', `/api/v1/runs/${run.body.runId}`, { key })).status).toBe(200);
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
    const run = await post(`/api/v1/tasks/${task.id}/run`);
    expect((await t.request('DELETE', `/api/v1/tasks/${task.id}`, { key })).status).toBe(204);
    const details = await t.request('GET', `/api/v1/tasks/runs/${run.body.runId}`, { key });
    expect(details.body.status).toBe('cancelled');
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
    await post(`/api/v1/tasks/${task.id}/approve`);
    await post(`/api/v1/tasks/${task.id}/run`);
    await taskIn(t, key, task.id, ['completed']);
    const gated = await createTask(t, key, { agentId, requiresApproval: true });
    await post(`/api/v1/tasks/${gated.id}/reject`);
    const queued = await createTask(t, key, { agentId });
    await post(`/api/v1/tasks/${queued.id}/cancel`);
    await t.request('DELETE', `/api/v1/tasks/${task.id}`, { key });
    const failing = await createTask(t, key, { agentId, description: '/fail no' });
    await post(`/api/v1/tasks/${failing.id}/run`);
    await taskIn(t, key, failing.id, ['failed']);
    await post(`/api/v1/tasks/${failing.id}/retry`);
    const events = await t.request('GET', '/api/v1/audit-events?resourceType=task&limit=100', { key });
    const actions = (id: string) =>
      events.body.events
        .filter((e: { resourceId: string }) => e.resourceId === id)
        .map((e: { action: string }) => e.action)
        .sort();
    expect(actions(task.id)).toEqual(['task.approved', 'task.created', 'task.deleted', 'task.run_requested']);
    expect(actions(gated.id)).toEqual(['task.created', 'task.rejected']);
    expect(actions(queued.id)).toEqual(['task.cancelled', 'task.created']);
    expect(actions(failing.id)).toEqual(['task.created', 'task.retried', 'task.run_requested']);
  });
});

describe('OpenAPI', () => {
  it('documents the task routes', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
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
