import { SecretBox } from '../../src/identity/secret-box.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signature } from '../../src/tasks/webhook-signatures.js';
import { dialect, expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { createTask, deliverWebhook, hookSecret, replica, taskIn, waitFor, workSettled } from './helpers.js';

let t: TestApp;
let key: string;
let agentId: string;

beforeAll(async () => {
  t = await startApp({ TASK_WORKERS: '2', TASK_POLL_MS: '50' });
  ({ key } = await t.tenant());
  agentId = (await t.agent(key, { appId: 'ops' })).id;
});
afterAll(() => t.close());

const deliver = (taskId: string, secret: string | null, body: string, options?: Parameters<typeof deliverWebhook>[4]) =>
  deliverWebhook(t, taskId, secret, body, options);

const runsOf = (id: string) => t.db.kysely.selectFrom('runs').selectAll().where('task_id', '=', id).orderBy('id').execute();
// The run route takes no body at all, but its generated type asks for one: {} says the same.
const runNow = async (id: string) => (await t.api(key).POST('/api/v1/tasks/{id}/run', { params: { path: { id } }, body: {} })).data!;

describe('webhook triggers', () => {
  it('creates a webhook task: the URL always, the secret once', async () => {
    const task = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' } });
    expect(task).toMatchObject({ type: 'triggered', status: 'pending', nextRunAt: null, overlapPolicy: 'skip' });
    expect(task.trigger).toEqual({
      type: 'webhook',
      url: `http://agentry.test/api/v1/hooks/${task.id}`,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
    });
    const secret = hookSecret(task);
    const got = await t.api(key).GET('/api/v1/tasks/{id}', { params: { path: { id: task.id } } });
    expect(got.data!.trigger).toEqual({ type: 'webhook', url: `http://agentry.test/api/v1/hooks/${task.id}` });
    expect(JSON.stringify(got.data)).not.toContain(secret);
    // Stored sealed, never as the secret itself.
    const row = await t.db.kysely.selectFrom('tasks').select('webhook_secret').where('id', '=', task.id).executeTakeFirstOrThrow();
    expect(row.webhook_secret).toMatch(/^v1\.mk\./);
    expect(row.webhook_secret).not.toContain(secret.slice(6));
    const audit = await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceId: task.id } } });
    expect(audit.response.status).toBe(200);
    expect(JSON.stringify(audit.data)).not.toContain(secret);
  });

  it('a correctly signed delivery starts a run with the JSON body as input', async () => {
    const task = await createTask(t, key, {
      agentId,
      type: 'triggered',
      trigger: { type: 'webhook' },
      description: 'New order',
      input: { shop: 'eu' },
    });
    const body = JSON.stringify({ orderId: 42 });
    const res = await deliver(task.id, hookSecret(task), body);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({
      accepted: true,
      taskId: task.id,
      fireId: expect.any(String),
      decision: 'fired',
      reason: null,
      duplicate: false,
    });
    const done = await taskIn(t, key, task.id, ['completed']);
    expect(done.output).toBe('New order\n\n{"shop":"eu","orderId":42}');
    expect(done.fires).toEqual([expect.objectContaining({ id: res.body.fireId, source: 'webhook', decision: 'fired' })]);
    // The same signed delivery again (a retry by the sender, or a replay): accepted, nothing new runs.
    const ts = Math.floor(Date.now() / 1000) - 1;
    const first = await deliver(task.id, hookSecret(task), '{"orderId":43}', { timestamp: ts });
    const replay = await deliver(task.id, hookSecret(task), '{"orderId":43}', { timestamp: ts });
    expect(first.body.duplicate).toBe(false);
    expect(replay.body).toMatchObject({ duplicate: true, fireId: first.body.fireId });
    await waitFor(async () => (await runsOf(task.id)).filter((r) => r.status === 'completed').length >= 2, 5000, 'second run');
    await workSettled(t, [task.id]);
    const runs = await runsOf(task.id);
    expect(runs).toHaveLength(2);
    expect(runs.filter((r) => r.output.includes('"orderId":43'))).toHaveLength(1);
  });

  it('an empty body is an empty input', async () => {
    const task = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' }, description: 'ping' });
    const ts = String(Math.floor(Date.now() / 1000));
    // Raw: no body and no content type at all.
    const res = await t.raw('POST', `/api/v1/hooks/${task.id}`, {
      headers: { 'x-agentry-timestamp': ts, 'x-agentry-signature': `sha256=${signature(hookSecret(task), ts, '')}` },
    });
    expect(res.status, res.text).toBe(202);
    expect((await taskIn(t, key, task.id, ['completed'])).output).toBe('ping');
  });

  it('refuses bad, missing, stale and foreign signatures: 401, nothing runs', async () => {
    const task = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' } });
    const other = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' } });
    const body = '{"orderId":7}';
    const secret = hookSecret(task);
    const expect401 = (res: Awaited<ReturnType<typeof deliver>>, code: string) => {
      expectProblem(res, 401, code);
      expect(res.headers['www-authenticate']).toBe('HMAC-SHA256');
    };
    expect401(await deliver(task.id, null, body), 'missing_signature');
    expect401(await deliver(task.id, secret, body, { signature: 'sha256=' + '0'.repeat(64) }), 'invalid_signature');
    expect401(await deliver(task.id, secret, body, { signature: 'sha1=abc' }), 'invalid_signature');
    expect401(await deliver(task.id, hookSecret(other), body), 'invalid_signature');
    expect401(await deliver(task.id, secret, body, { timestamp: Math.floor(Date.now() / 1000) - 3600 }), 'signature_expired');
    expect401(await deliver(task.id, secret, body, { timestamp: Math.floor(Date.now() / 1000) + 3600 }), 'signature_expired');
    // Signed for another body.
    const ts = Math.floor(Date.now() / 1000);
    expect401(
      await deliver(task.id, secret, '{"orderId":8}', {
        timestamp: ts,
        signature: `sha256=${signature(secret, String(ts), body)}`,
      }),
      'invalid_signature',
    );
    await workSettled(t, [task.id]);
    expect(await runsOf(task.id)).toHaveLength(0);
    const fires = await t.api(key).GET('/api/v1/tasks/{id}/fires', { params: { path: { id: task.id } } });
    expect(fires.data!.total).toBe(0);
  });

  it('an id with no webhook answers exactly as a known one with a bad signature: ids cannot be probed', async () => {
    const hooked = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' } });
    const plain = await createTask(t, key, { agentId, type: 'scheduled', schedule: '0 0 1 * *' });
    const unknown = '01900000-0000-7000-8000-000000000000';
    // The parts of a refusal that may tell ids apart: everything but the per-request id and the path.
    const seen = (res: Awaited<ReturnType<typeof deliver>>) => {
      const { instance: _instance, requestId: _requestId, ...body } = res.body ?? {};
      return { status: res.status, authenticate: res.headers['www-authenticate'], type: res.headers['content-type'], body };
    };
    const stale = { timestamp: Math.floor(Date.now() / 1000) - 3600 };
    for (const [secret, options, code] of [
      ['whsec_x', undefined, 'invalid_signature'],
      [null, undefined, 'missing_signature'],
      ['whsec_x', stale, 'signature_expired'],
    ] as const) {
      const known = seen(await deliver(hooked.id, secret, '{}', options));
      expect(known).toMatchObject({ status: 401, body: { code } });
      expect(seen(await deliver(plain.id, secret, '{}', options))).toEqual(known);
      expect(seen(await deliver(unknown, secret, '{}', options))).toEqual(known);
    }
  });

  it('400 for a body that is not a JSON object; 415 for other media', async () => {
    const task = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' } });
    const secret = hookSecret(task);
    expectProblem(await deliver(task.id, secret, '[1,2]'), 400, 'validation_failed');
    expectProblem(await deliver(task.id, secret, '{"a":'), 400, 'invalid_json');
    expectProblem(await deliver(task.id, secret, '{"__proto__":{"x":1}}'), 400, 'invalid_json');
    const ts = String(Math.floor(Date.now() / 1000));
    // Raw: a form-encoded payload.
    const res = await t.raw('POST', `/api/v1/hooks/${task.id}`, {
      payload: 'a=1',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-agentry-timestamp': ts,
        'x-agentry-signature': `sha256=${signature(secret, ts, 'a=1')}`,
      },
    });
    expectProblem(res, 415, 'unsupported_media_type');
  });

  it('a task awaiting approval refuses deliveries until approved', async () => {
    const task = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' }, requiresApproval: true });
    expectProblem(await deliver(task.id, hookSecret(task), '{}'), 409, 'task_awaiting_approval');
    await t.api(key).POST('/api/v1/tasks/{id}/approve', { params: { path: { id: task.id } } });
    expect((await deliver(task.id, hookSecret(task), '{}')).status).toBe(202);
    await taskIn(t, key, task.id, ['completed']);
  });

  it('overlap skip: a delivery while a run is active is recorded as skipped', async () => {
    const task = await createTask(t, key, {
      agentId,
      type: 'triggered',
      trigger: { type: 'webhook' },
      description: '/delay 100\na b c d e',
    });
    const first = await deliver(task.id, hookSecret(task), '{"n":1}');
    const second = await deliver(task.id, hookSecret(task), '{"n":2}');
    expect(first.body.decision).toBe('fired');
    expect(second.body).toMatchObject({ decision: 'skipped', reason: 'overlap' });
    await taskIn(t, key, task.id, ['completed']);
    expect(await runsOf(task.id)).toHaveLength(1);
    const audit = await t.api(key).GET('/api/v1/audit-events', {
      params: { query: { resourceId: task.id, action: 'task.webhook_received' } },
    });
    expect(audit.data!.events).toHaveLength(2);
    expect(audit.data!.events[0]).toMatchObject({ actorType: 'system', actorId: 'webhook' });
  });
});

describe('webhook secrets at rest', () => {
  it('are sealed per task (AES-256-GCM, the task id authenticated) under a key derived from the master key', async () => {
    const box = new SecretBox(Buffer.alloc(32, 1), 'webhook-secrets');
    const other = new SecretBox(Buffer.alloc(32, 2), 'webhook-secrets');
    const sealed = box.seal('whsec_abc', 'task-1');
    expect(sealed).toMatch(/^v1\.mk\./);
    expect(sealed).not.toContain('whsec_abc');
    expect(box.open(sealed, 'task-1')).toBe('whsec_abc');
    expect(new SecretBox(Buffer.alloc(32, 1), 'webhook-secrets').open(sealed, 'task-1')).toBe('whsec_abc');
    expect(box.open(sealed, 'task-2')).toBeNull();
    expect(other.open(sealed, 'task-1')).toBeNull();
    expect(box.open('garbage', 'task-1')).toBeNull();
    // What the server stored opens with this server's master key.
    const { loadMasterKey } = await import('../../src/identity/master-key.js');
    const row = await t.db.kysely
      .selectFrom('tasks')
      .select(['id', 'webhook_secret'])
      .where('webhook_secret', 'is not', null)
      .executeTakeFirst();
    expect(row).toBeDefined();
    expect(new SecretBox(loadMasterKey(t.config), 'webhook-secrets').open(row!.webhook_secret!, row!.id)).toMatch(/^whsec_/);
  });

  it('a sealed secret copied onto another task does not authenticate deliveries there', async () => {
    const a = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' } });
    const b = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' } });
    const row = await t.db.kysely.selectFrom('tasks').select('webhook_secret').where('id', '=', a.id).executeTakeFirstOrThrow();
    await t.db.kysely.updateTable('tasks').set({ webhook_secret: row.webhook_secret }).where('id', '=', b.id).execute();
    expectProblem(await deliver(b.id, hookSecret(a), '{}'), 401, 'invalid_signature');
    expect(await runsOf(b.id)).toHaveLength(0);
  });
});

describe('platform event triggers', () => {
  it('chains tasks: completed fires the listener once per source run', async () => {
    const source = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' }, description: 'collect' });
    const onDone = await createTask(t, key, {
      agentId,
      type: 'triggered',
      trigger: { event: 'task.completed', taskId: source.id },
      description: 'follow up',
    });
    const onFail = await createTask(t, key, {
      agentId,
      type: 'triggered',
      trigger: { type: 'event', event: 'task.failed', taskId: source.id },
      description: 'alert',
    });
    expect(onDone.trigger).toEqual({ type: 'event', event: 'task.completed', taskId: source.id });
    const { runId } = await runNow(source.id);
    await taskIn(t, key, source.id, ['completed']);
    const followed = await taskIn(t, key, onDone.id, ['completed']);
    expect(followed.output).toBe(
      `follow up\n\n${JSON.stringify({ event: 'task.completed', taskId: source.id, runId, output: 'collect' })}`,
    );
    expect(followed.fires).toEqual([
      expect.objectContaining({
        source: 'event',
        decision: 'fired',
        detail: { event: 'task.completed', sourceTaskId: source.id, sourceRunId: runId },
      }),
    ]);
    await workSettled(t, [source.id, onDone.id, onFail.id]);
    expect(await runsOf(onDone.id)).toHaveLength(1);
    expect(await runsOf(onFail.id)).toHaveLength(0);
    // Settling the same run again (the sweep, another replica) fires nothing more.
    await t.services.tasks.executor.runEnded(runId!);
    await t.services.tasks.executor.sweep();
    await workSettled(t, [source.id, onDone.id, onFail.id]);
    expect(await runsOf(onDone.id)).toHaveLength(1);
    const fires = await t.db.kysely.selectFrom('task_fires').select('fire_key').where('task_id', '=', onDone.id).execute();
    expect(fires).toEqual([{ fire_key: `event:${runId}` }]);
  });

  it('failed fires task.failed listeners once the last attempt failed', async () => {
    const source = await createTask(t, key, {
      agentId,
      type: 'triggered',
      trigger: { type: 'webhook' },
      description: '/fail broken',
      retryPolicy: { maxAttempts: 2, backoffSeconds: 0 },
    });
    const onFail = await createTask(t, key, {
      agentId,
      type: 'triggered',
      trigger: { event: 'task.failed', taskId: source.id },
      description: 'alert',
    });
    await deliver(source.id, hookSecret(source), '{}');
    const alerted = await taskIn(t, key, onFail.id, ['completed']);
    expect(alerted.output).toContain('"event":"task.failed"');
    expect(alerted.output).toContain('"message":"broken"');
    expect(await runsOf(source.id)).toHaveLength(2);
    expect(await runsOf(onFail.id)).toHaveLength(1);
  });

  it('a deleted listener no longer fires', async () => {
    const source = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' }, description: 'x' });
    const listener = await createTask(t, key, { agentId, type: 'triggered', trigger: { event: 'task.completed', taskId: source.id } });
    await t.api(key).DELETE('/api/v1/tasks/{id}', { params: { path: { id: listener.id } } });
    await runNow(source.id);
    await taskIn(t, key, source.id, ['completed']);
    await workSettled(t, [source.id, listener.id]);
    expect(await runsOf(listener.id)).toHaveLength(0);
  });
});

describe.skipIf(dialect !== 'postgres')('triggers across replicas (PostgreSQL)', () => {
  it('a chained trigger fires once when two replicas both settle the source run', async () => {
    const other = await replica(t, { TASK_WORKERS: '2', TASK_POLL_MS: '50' });
    try {
      const source = await createTask(t, key, { agentId, type: 'triggered', trigger: { type: 'webhook' }, description: 'src' });
      const runId = (await runNow(source.id)).runId!;
      await taskIn(t, key, source.id, ['completed']);
      // As if the process that ran it died right after the run's terminal write: the job is unsettled.
      const listener = await createTask(t, key, {
        agentId,
        type: 'triggered',
        trigger: { event: 'task.completed', taskId: source.id },
        overlapPolicy: 'allow',
      });
      const old = new Date(Date.now() - 120_000).toISOString();
      await t.db.kysely.updateTable('task_jobs').set({ state: 'running', updated_at: old }).where('run_id', '=', runId).execute();
      // Both replicas notice at once (a late hook here, sweeps there).
      await Promise.all([
        t.services.tasks.executor.runEnded(runId),
        other.services.tasks.executor.sweep(),
        t.services.tasks.executor.sweep(),
        other.services.tasks.executor.runEnded(runId),
      ]);
      await taskIn(t, key, listener.id, ['completed']);
      await workSettled(t, [source.id, listener.id]);
      expect(await runsOf(listener.id)).toHaveLength(1);
    } finally {
      await other.close();
    }
  });
});
