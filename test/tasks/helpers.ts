import type { FastifyInstance } from 'fastify';
import { buildApp, createServices, type Services } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { signature } from '../../src/tasks/webhook-signatures.js';
import type { TestApp } from '../helpers/app.js';

/** Polls until `check` answers something truthy (or throws the last failure after `timeoutMs`). */
export async function waitFor<T>(check: () => Promise<T> | T, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Delivers `body` to a webhook task as its sender would: signed with `secret` (none when null) over the
 * timestamp and the raw body, unless `options.signature` replaces the signature.
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
  return t.request('POST', `/api/v1/hooks/${taskId}`, { payload: body, headers });
}

export async function createTask(t: TestApp, key: string, body: Record<string, unknown>) {
  const res = await t.request('POST', '/api/v1/tasks', { key, body: { name: 'Task', description: 'hello from a task', ...body } });
  if (res.status !== 201) throw new Error(`task not created: ${res.text}`);
  return res.body;
}

/** Waits until the task reaches one of `statuses` and answers it. */
export function taskIn(t: TestApp, key: string, id: string, statuses: string[], timeoutMs = 10_000) {
  return waitFor(
    async () => {
      const res = await t.request('GET', `/api/v1/tasks/${id}`, { key });
      return statuses.includes(res.body?.status) ? res.body : null;
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

export async function replica(t: TestApp, env: Record<string, string> = {}): Promise<Replica> {
  const base = { DATA_DIR: t.config.dataDir, ...(t.config.databaseUrl ? { DATABASE_URL: t.config.databaseUrl } : {}) };
  const config = loadConfig({ ...base, LOG_LEVEL: 'silent', PUBLIC_BASE_URL: 'http://agentry.test', ...env });
  const db = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const services = createServices(config, db);
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
