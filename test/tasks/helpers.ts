import type { FastifyInstance } from 'fastify';
import { vi } from 'vitest';
import type { components, paths } from '../../packages/client/src/generated/openapi.js';
import { buildApp, createServices, type Services } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { signature } from '../../src/tasks/webhook-signatures.js';
import type { AppSetup, TestApp } from '../helpers/app.js';

type Task = components['schemas']['Task'];
type TaskInput = NonNullable<paths['/api/v1/tasks']['post']['requestBody']>['content']['application/json'];

/** Polls every 20 ms until `check` answers something truthy (vi.waitFor: the last failure after `timeoutMs`). */
export function waitFor<T>(check: () => Promise<T> | T, timeoutMs = 10_000, what = 'condition'): Promise<NonNullable<T>> {
  return vi.waitFor(
    async () => {
      let value: T;
      try {
        value = await check();
      } catch (err) {
        throw new Error(`timed out waiting for ${what}: ${(err as Error).message}`, { cause: err });
      }
      if (!value) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    { timeout: timeoutMs, interval: 20 },
  );
}

/**
 * Delivers `body` to a webhook task as its sender would: signed with `secret` (none when null) over the
 * timestamp and the raw body, unless `options.signature` replaces the signature. Raw: the signature is
 * over these exact bytes, which the typed client would serialise again.
 */
export function deliverWebhook(
  t: TestApp,
  taskId: string,
  secret: string | null,
  body: string,
  options: { timestamp?: number; signature?: string; headers?: Record<string, string> } = {},
) {
  const ts = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-agentry-timestamp': ts, ...(options.headers ?? {}) };
  if (secret !== null) headers['x-agentry-signature'] = options.signature ?? `sha256=${signature(secret, ts, body)}`;
  return t.raw('POST', `/api/v1/hooks/${taskId}`, { payload: body, headers });
}

/** The secret of a webhook task (in the answer that created it only). */
export function hookSecret(task: Task): string {
  if (task.trigger?.type !== 'webhook' || task.trigger.secret === undefined) throw new Error(`task ${task.id} shows no webhook secret`);
  return task.trigger.secret;
}

/** Creates a task (name 'Task', description 'hello from a task' unless given). */
export async function createTask(t: TestApp, key: string, body: Partial<TaskInput> & { agentId: string }): Promise<Task> {
  const { data, error, response } = await t
    .api(key)
    .POST('/api/v1/tasks', { body: { name: 'Task', description: 'hello from a task', ...body } });
  if (response.status !== 201) throw new Error(`task not created: ${JSON.stringify(error)}`);
  return data!;
}

/**
 * Waits until no work of these tasks is queued, claimed or running. A job settles in the transaction
 * that fires the tasks chained to it, so from then on nothing more runs for them unless new work comes.
 */
export function workSettled(t: TestApp, taskIds: string[], timeoutMs = 10_000) {
  return waitFor(
    async () => {
      const busy = await t.db.kysely
        .selectFrom('task_jobs')
        .select('id')
        .where('task_id', 'in', taskIds)
        .where('state', 'in', ['queued', 'claimed', 'running'])
        .execute();
      return busy.length === 0;
    },
    timeoutMs,
    `the work of ${taskIds.join(', ')} to settle`,
  );
}

/** Waits until the task reaches one of `statuses` and answers it. */
export function taskIn(t: TestApp, key: string, id: string, statuses: string[], timeoutMs = 10_000) {
  return waitFor(
    async () => {
      const { data } = await t.api(key).GET('/api/v1/tasks/{id}', { params: { path: { id } } });
      return data && statuses.includes(data.status) ? data : null;
    },
    timeoutMs,
    `task ${id} to become ${statuses.join(' or ')}`,
  );
}

/** Another app instance (a replica) on the database of `t`. */
export interface Replica {
  app: FastifyInstance;
  db: Db;
  config: Config;
  services: Services;
  close(): Promise<void>;
}

export async function replica(t: TestApp, env: Record<string, string> = {}, { clock }: AppSetup = {}): Promise<Replica> {
  const base = { DATA_DIR: t.config.dataDir, ...(t.config.databaseUrl ? { DATABASE_URL: t.config.databaseUrl } : {}) };
  const config = loadConfig({ ...base, LOG_LEVEL: 'silent', PUBLIC_BASE_URL: 'http://agentry.test', ...env });
  const db = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const services = createServices(config, db, { clock });
  const app = await buildApp({ config, db, services });
  await app.ready();
  return {
    app,
    db,
    config,
    services,
    async close() {
      await app.close();
      await db.close();
    },
  };
}
