import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp, createServices, type Services } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { migrate, openDatabase, type Db } from '../../src/db/database.js';

export type Dialect = 'sqlite' | 'postgres';
export const dialect: Dialect = process.env.AGENTRY_TEST_DB === 'postgres' ? 'postgres' : 'sqlite';

export interface TestDatabase {
  env: { DATA_DIR: string; DATABASE_URL?: string };
  drop(): Promise<void>;
}

/** A fresh, empty database for one test file: a temp SQLite folder, or a new PostgreSQL database. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-test-'));
  if (dialect === 'sqlite') {
    // DATABASE_URL '' (not unset): servers and CLIs spawned with process.env must not fall back to the
    // PostgreSQL database the postgres project was given.
    return { env: { DATA_DIR: dataDir, DATABASE_URL: '' }, drop: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
  }
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('AGENTRY_TEST_DB=postgres needs DATABASE_URL');
  const name = `agentry_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: url.toString() },
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Response<T = any> {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: T;
  text: string;
}

export interface RequestOptions {
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  /** Raw payload, sent as is (for malformed-input tests). */
  payload?: string | Buffer;
}

/** A test database opened (and, unless told not to, migrated) for one test file; `close` closes and drops it. */
export async function openTestDb(options: { migrate?: boolean } = {}): Promise<{ db: Db; close(): Promise<void> }> {
  const database = await createTestDatabase();
  const db = openDatabase({ databaseUrl: database.env.DATABASE_URL || undefined, dataDir: database.env.DATA_DIR });
  if (options.migrate !== false) await migrate(db);
  return {
    db,
    close: async () => {
      await db.close();
      await database.drop();
    },
  };
}

export interface TestApp {
  app: FastifyInstance;
  db: Db;
  config: Config;
  services: Services;
  /** Creates a tenant through the real service and returns its all-permissions key. */
  tenant(name?: string): Promise<{ id: string; key: string }>;
  request<T = any>(method: string, url: string, options?: RequestOptions): Promise<Response<T>>;
  /** Listens on a free loopback port (for SSE and MCP clients); returns the base URL. */
  listen(): Promise<string>;
  /** fetch() against the listening server with the key as bearer. */
  fetch(path: string, key: string, init?: { method?: string; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal }): Promise<globalThis.Response>;
  close(): Promise<void>;
}

export async function startApp(extraEnv: Record<string, string> = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  // Test MCP servers listen on loopback, which the URL guard refuses unless allowed.
  const config = loadConfig({ ...database.env, LOG_LEVEL: 'silent', PUBLIC_BASE_URL: 'http://agentry.test', MCP_ALLOWED_HOSTS: '127.0.0.1', ...extraEnv });
  const db = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  await migrate(db);
  const services = createServices(config, db);
  const app = await buildApp({ config, db, services });
  await app.ready();
  let counter = 0;
  let baseUrl: string | undefined;
  return {
    app,
    db,
    config,
    services,
    async tenant(name = `tenant-${++counter}`) {
      const { tenant, apiKey } = await services.tenancy.createTenant(name);
      return { id: tenant.id, key: apiKey };
    },
    async request(method, url, options = {}) {
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (options.key) headers.authorization = `Bearer ${options.key}`;
      let payload: string | Buffer | undefined = options.payload;
      if (options.body !== undefined) {
        payload = JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await app.inject({ method: method as any, url, headers, payload });
      let body: any = undefined;
      try {
        body = res.body ? JSON.parse(res.body) : undefined;
      } catch {
        body = undefined;
      }
      return { status: res.statusCode, headers: res.headers, body, text: res.body };
    },
    async listen() {
      baseUrl ??= await app.listen({ port: 0, host: '127.0.0.1' });
      return baseUrl;
    },
    async fetch(path, key, init = {}) {
      if (!baseUrl) throw new Error('call listen() first');
      return globalThis.fetch(`${baseUrl}${path}`, {
        method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
        headers: { authorization: `Bearer ${key}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.headers ?? {}) },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: init.signal,
      });
    },
    async close() {
      await app.close();
      await db.close();
      await database.drop();
    },
  };
}

/** The secret part of an API key (`agk_<32 hex id>_<secret>`; the secret may itself contain `_`). */
export const secretOf = (apiKey: string) => apiKey.slice('agk_'.length + 32 + 1);

/** Asserts an RFC 9457 problem response with the given status and code. */
export function expectProblem(res: Response, status: number, code: string) {
  const ok =
    res.status === status &&
    String(res.headers['content-type']).startsWith('application/problem+json') &&
    res.body?.code === code &&
    res.body?.status === status &&
    typeof res.body?.detail === 'string' &&
    typeof res.body?.title === 'string' &&
    typeof res.body?.type === 'string';
  if (!ok) {
    throw new Error(`expected problem ${status} ${code}, got ${res.status} ${res.headers['content-type']} ${res.text}`);
  }
}
