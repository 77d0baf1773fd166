import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import createClient, { type Client } from 'openapi-fetch';
import pg from 'pg';
import { expect, inject } from 'vitest';
import { buildApp, createLogger, createServices, type Services } from '../../src/app.js';
import type { Clock } from '../../src/clock.js';
import { loadConfig, type Config } from '../../src/config.js';
import { migrate, openDatabase, type Db } from '../../src/db/database.js';
import type { components, paths } from '../../packages/client/src/generated/openapi.js';
import { startServer, type ServerProcess } from './process.js';

/*
 * The test fixtures: every test file starts here. `startApp()` gives an app in this process (with a
 * typed client over `app.inject`), `startProcess()` the built server as a real process; both on a
 * fresh database of the dialect under test. Tenants, keys and agents are made through the API.
 */

/** The API's own types, generated from the served OpenAPI document (`npm run test:types`). */
type Api = Client<paths>;
type Agent = components['schemas']['Agent'];
export type Permission = NonNullable<
  paths['/api/v1/api-keys']['post']['requestBody']
>['content']['application/json']['permissions'][number];
type AgentInput = NonNullable<paths['/api/v1/agents']['post']['requestBody']>['content']['application/json'];

export type Dialect = 'sqlite' | 'postgres';
export const dialect: Dialect = process.env.AGENTRY_TEST_DB === 'postgres' ? 'postgres' : 'sqlite';

export interface TestDatabase {
  env: { DATA_DIR: string; DATABASE_URL?: string };
  drop(): Promise<void>;
}

/**
 * A fresh database for one test file: a temp SQLite folder, or a new PostgreSQL database. Empty,
 * unless `migrated` asks for one already migrated (a copy of the run's template).
 */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-test-'));
  if (dialect === 'sqlite') {
    const template = options.migrated ? inject('sqliteTemplate') : undefined;
    if (template) {
      const file = path.join(dataDir, 'agentry.sqlite');
      fs.copyFileSync(template, file);
      // Private, as the server makes its own database file (the doctor checks the mode).
      fs.chmodSync(file, 0o600);
    }
    // DATABASE_URL '' (not unset): servers and CLIs spawned with process.env must not fall back to the
    // PostgreSQL database the postgres project was given.
    return { env: { DATA_DIR: dataDir, DATABASE_URL: '' }, drop: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
  }
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('AGENTRY_TEST_DB=postgres needs DATABASE_URL');
  const name = `agentry_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const template = options.migrated ? inject('postgresTemplate') : undefined;
  await admin.query(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
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

interface RequestOptions {
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  /** Raw payload, sent as is (for malformed-input tests). */
  payload?: string | Buffer;
}

/** A test database opened (and, unless told not to, migrated) for one test file; `close` closes and drops it. */
export async function openTestDb(options: { migrate?: boolean } = {}): Promise<{ db: Db; close(): Promise<void> }> {
  const database = await createTestDatabase({ migrated: options.migrate !== false });
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
  /** A new API key of the tenant of `key`, holding only `permissions`. */
  key(key: string, permissions: Permission[]): Promise<string>;
  /** Creates an agent (name 'agent', appId 'app' unless given) and expects 201. */
  agent(key: string, body?: Partial<AgentInput>): Promise<Agent>;
  /** A client typed by the OpenAPI document, calling the app in process with `key` as bearer. */
  api(key?: string | null): Api;
  /**
   * The raw escape hatch: any method, URL and payload, untyped. Only for what the typed client cannot
   * send (malformed bodies, wrong types, unknown routes, raw headers); everything else uses `api`.
   */
  raw<T = any>(method: string, url: string, options?: RequestOptions): Promise<Response<T>>;
  /** Listens on a free loopback port (for SSE and MCP clients); returns the base URL. */
  listen(): Promise<string>;
  /** fetch() against the listening server with the key as bearer. */
  fetch(
    path: string,
    key: string,
    init?: { method?: string; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal },
  ): Promise<globalThis.Response>;
  close(): Promise<void>;
}

/** What an app is built with besides its environment. */
export interface AppSetup {
  /** The app's one clock (a ManualClock moves time for expiry, schedules and caches); default: real time. */
  clock?: Clock;
  /**
   * Another app's database instead of a fresh one (the same server restarted with another configuration);
   * closing this app leaves the database to its owner.
   */
  sameDatabaseAs?: TestApp;
  /** Collects the server's log lines, parsed (give LOG_LEVEL in the env: the default is silent). */
  logLines?: Record<string, unknown>[];
}

export async function startApp(
  extraEnv: Record<string, string> = {},
  { clock, sameDatabaseAs, logLines }: AppSetup = {},
): Promise<TestApp> {
  const database: TestDatabase = sameDatabaseAs
    ? { env: { DATA_DIR: sameDatabaseAs.config.dataDir, DATABASE_URL: sameDatabaseAs.config.databaseUrl ?? '' }, drop: async () => {} }
    : await createTestDatabase({ migrated: true });
  // Test MCP servers listen on loopback, which the URL guard refuses unless allowed.
  const config = loadConfig({
    ...database.env,
    LOG_LEVEL: 'silent',
    PUBLIC_BASE_URL: 'http://agentry.test',
    MCP_ALLOWED_HOSTS: '127.0.0.1',
    ...extraEnv,
  });
  const db = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  await migrate(db);
  const logger = logLines ? createLogger(config, { write: (line: string) => logLines.push(JSON.parse(line)) }) : undefined;
  const services = createServices(config, db, { clock, logger });
  const app = await buildApp({ config, db, services });
  await app.ready();
  let counter = 0;
  let baseUrl: string | undefined;
  const api = (key?: string | null): Api => apiOf(app, key);
  return {
    app,
    db,
    config,
    services,
    async tenant(name = `tenant-${++counter}`) {
      const { tenant, apiKey } = await services.tenancy.createTenant(name);
      return { id: tenant.id, key: apiKey };
    },
    async key(key, permissions) {
      const { data, error, response } = await api(key).POST('/api/v1/api-keys', { body: { name: permissions.join('+'), permissions } });
      expect(response.status, JSON.stringify(error)).toBe(201);
      return data!.key;
    },
    async agent(key, body = {}) {
      const { data, error, response } = await api(key).POST('/api/v1/agents', { body: { name: 'agent', appId: 'app', ...body } });
      expect(response.status, JSON.stringify(error)).toBe(201);
      return data!;
    },
    api,
    raw: (method, url, options) => injectRaw(app, method, url, options),
    async listen() {
      baseUrl ??= await app.listen({ port: 0, host: '127.0.0.1' });
      return baseUrl;
    },
    async fetch(path, key, init = {}) {
      if (!baseUrl) throw new Error('call listen() first');
      return globalThis.fetch(`${baseUrl}${path}`, {
        method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
        headers: {
          authorization: `Bearer ${key}`,
          ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(init.headers ?? {}),
        },
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

/** The untyped request behind `raw`: the payload as given, the body parsed when it is JSON. */
async function injectRaw(app: FastifyInstance, method: string, url: string, options: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let payload: string | Buffer | undefined = options.payload;
  if (options.body !== undefined) {
    payload = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await app.inject({ method: method as any, url, headers, payload });
  let body: any;
  try {
    body = res.body ? JSON.parse(res.body) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body, text: res.body };
}

/** The typed client over `app.inject` of any app (a replica's too), with `key` as bearer. */
export function apiOf(app: FastifyInstance, key?: string | null): Api {
  return createClient<paths>({
    baseUrl: 'http://agentry.test',
    fetch: (request) => injectFetch(app, request),
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
}

/** Answers a fetch Request through `app.inject`, so the typed client needs no listening socket. */
async function injectFetch(app: FastifyInstance, request: Request): Promise<globalThis.Response> {
  const url = new URL(request.url);
  const payload = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
  const res = await app.inject({
    method: request.method as 'GET',
    url: url.pathname + url.search,
    headers: Object.fromEntries(request.headers),
    payload,
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    for (const v of [value ?? []].flat()) headers.append(name, String(v));
  }
  const empty = res.statusCode === 204 || res.statusCode === 304 || request.method === 'HEAD';
  // A fetch Response cannot carry a body on these; one sent anyway is the server's error, not hidden here.
  if (empty && res.rawPayload.length > 0) throw new Error(`${request.method} ${url.pathname} answered ${res.statusCode} with a body`);
  return new globalThis.Response(empty ? null : res.rawPayload, { status: res.statusCode, headers });
}

export interface TestProcess {
  server: ServerProcess;
  database: TestDatabase;
  url: string;
  /** Stops the server (SIGTERM) and drops its database. */
  close(): Promise<void>;
}

/** The built server (`dist/main.js`) as a real process on a fresh test database. */
export async function startProcess(extraEnv: Record<string, string> = {}): Promise<TestProcess> {
  const database = await createTestDatabase({ migrated: true });
  let server: ServerProcess;
  try {
    server = await startServer({ ...database.env, ...extraEnv });
  } catch (err) {
    await database.drop();
    throw err;
  }
  return {
    server,
    database,
    url: server.url,
    async close() {
      await server.stop();
      await database.drop();
    },
  };
}

/** The secret part of an API key (`agk_<32 hex id>_<secret>`; the secret may itself contain `_`). */
export interface Replica {
  app: FastifyInstance;
  db: Db;
  services: Services;
}

/**
 * `count` in-process instances of the app on one fresh database (the first migrates it), as replicas
 * sharing PostgreSQL are; `close` closes them all and drops the database.
 */
export async function startReplicas(
  count: number,
  extraEnv: Record<string, string> = {},
): Promise<{ replicas: Replica[]; close(): Promise<void> }> {
  const database = await createTestDatabase({ migrated: true });
  const config = loadConfig({ ...database.env, LOG_LEVEL: 'silent', PUBLIC_BASE_URL: 'http://agentry.test', ...extraEnv });
  const replicas: Replica[] = [];
  for (let i = 0; i < count; i++) {
    const db = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    if (i === 0) await migrate(db);
    const services = createServices(config, db);
    const app = await buildApp({ config, db, services });
    await app.ready();
    replicas.push({ app, db, services });
  }
  return {
    replicas,
    close: async () => {
      for (const { app, db } of replicas) {
        await app.close();
        await db.close();
      }
      await database.drop();
    },
  };
}

export const secretOf = (apiKey: string) => apiKey.slice('agk_'.length + 32 + 1);

/** What the typed client (`api`) answers: the parsed body as `data` or `error`, and the fetch Response. */
export interface ApiResult {
  response: globalThis.Response;
  error?: unknown;
  data?: unknown;
}

/** Asserts an RFC 9457 problem response with the given status and code (a raw response or the typed client's result). */
export function expectProblem(res: Response | ApiResult, status: number, code: string) {
  const [actualStatus, contentType, body, text] =
    'response' in res
      ? [res.response.status, res.response.headers.get('content-type'), res.error as any, JSON.stringify(res.error ?? res.data)]
      : [res.status, res.headers['content-type'], res.body, res.text];
  const ok =
    actualStatus === status &&
    String(contentType).startsWith('application/problem+json') &&
    body?.code === code &&
    body?.status === status &&
    typeof body?.detail === 'string' &&
    typeof body?.title === 'string' &&
    typeof body?.type === 'string';
  if (!ok) {
    throw new Error(`expected problem ${status} ${code}, got ${actualStatus} ${contentType} ${text}`);
  }
}
