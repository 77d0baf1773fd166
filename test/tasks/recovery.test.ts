import { Agentry } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/app.js';
import { cli, startServer, type ServerProcess } from '../helpers/process.js';
import { waitFor } from './helpers.js';

/**
 * A real server process killed with SIGKILL in the middle of task runs: its leases expire, another
 * process declares the runs interrupted and the work is retried (or failed) per the retry policy.
 * Needs the build (`npm run build`), like the other process tests.
 */

let database: TestDatabase;
const servers: ServerProcess[] = [];
const env = () => ({ ...database.env, RUN_LEASE_SECONDS: '2', TASK_POLL_MS: '100', LOG_LEVEL: 'warn' });

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  for (const s of servers) await s.stop('SIGKILL');
  await database.drop();
});

/** The SDK, on `server`, with `key`. */
const clientOf = (server: ServerProcess, key: string) => new Agentry({ baseUrl: server.url, apiKey: key });

describe('a worker killed mid-run', () => {
  it('loses its lease; the run is recovered and the task retried or failed per its retry policy', async () => {
    const first = await startServer(env());
    servers.push(first);
    const created = await cli(['tenants', 'create', 'Crash', '--json'], database.env);
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout).apiKey as string;
    const onFirst = clientOf(first, key);
    const agent = await onFirst.api.POST('/api/v1/agents', { body: { name: 'Worker', appId: 'ops' } });
    expect(agent.response.status).toBe(201);
    const agentId = agent.data!.id;
    const slow = '/delay 250\none two three four five six';
    const retried = await onFirst.api.POST('/api/v1/tasks', {
      body: { name: 'retried', description: slow, agentId, retryPolicy: { maxAttempts: 2, backoffSeconds: 0 } },
    });
    const failed = await onFirst.api.POST('/api/v1/tasks', { body: { name: 'failed', description: slow, agentId } });
    expect(retried.response.status).toBe(201);
    expect(failed.response.status).toBe(201);
    const [retriedId, failedId] = [retried.data!.id, failed.data!.id];
    for (const id of [retriedId, failedId]) {
      await waitFor(async () => (await onFirst.tasks.get(id)).status === 'running', 10_000, 'both running');
    }

    expect(await first.stop('SIGKILL')).toBeNull();
    const second = await startServer(env());
    servers.push(second);
    const onSecond = clientOf(second, key);

    const done = await waitFor(
      async () => {
        const r = await onSecond.tasks.get(retriedId);
        return r.status === 'completed' ? r : null;
      },
      20_000,
      'the retried task to complete elsewhere',
    );
    expect(done.runs).toHaveLength(2);
    const [again, lost] = done.runs;
    expect(lost).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    expect(again).toMatchObject({ status: 'completed', output: 'one two three four five six' });
    // Never two at once: the retry started after the lost run was declared over.
    expect(again.startedAt! >= lost.completedAt!).toBe(true);

    const gaveUp = await waitFor(
      async () => {
        const r = await onSecond.tasks.get(failedId);
        return r.status === 'failed' ? r : null;
      },
      10_000,
      'the other task to fail',
    );
    expect(gaveUp.lastError).toMatchObject({ code: 'interrupted' });
    expect(gaveUp.runs).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 500));
    const runs = await onSecond.api.GET('/api/v1/tasks/{id}/runs', { params: { path: { id: failedId } } });
    expect(runs.data!.total).toBe(1);
  });
});
