import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Agentry } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SVID_DEFAULT_TTL_S } from '../../src/identity/svid.js';
import { createTestDatabase, dialect, startApp, type TestApp, type TestDatabase } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { cli, startServer } from '../helpers/process.js';

/**
 * Backup and restore (docs/operations.md, "Backup and restore"): a tenant's agents, conversations, runs
 * and identities come back the same from `agentry export` + `agentry import` into a fresh database (both
 * dialects), from `agentry backup` of a running SQLite server, and from pg_dump/pg_restore of PostgreSQL;
 * each with the master key copied beside it. The restored instance is the built server, read over HTTP.
 */

const exec = promisify(execFile);
let source: TestApp;
let key: string;
let tenantId: string;
let agentId: string;
const fresh: TestDatabase[] = [];
const files = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'agentry-backup-'));

/**
 * What a restored instance must answer the same: agents, conversations and their messages, runs and
 * their events, the agent's public keys. Read through a typed client: the source's in process, the
 * restored server's the SDK's (`client.api`).
 */
async function snapshot(api: ReturnType<TestApp['api']>) {
  const read = <T>(route: string, { data, response }: { data?: T; response: globalThis.Response }) => {
    expect(response.status, route).toBe(200);
    return data!;
  };
  const limit = { query: { limit: 100 } };
  const conversations = read('/api/v1/conversations', await api.GET('/api/v1/conversations', { params: limit }));
  const runs = read('/api/v1/runs', await api.GET('/api/v1/runs', { params: limit }));
  return {
    agents: read('/api/v1/agents', await api.GET('/api/v1/agents')),
    conversations,
    messages: await Promise.all(
      conversations.conversations.map(async ({ id }) =>
        read(
          `/api/v1/conversations/${id}/messages`,
          await api.GET('/api/v1/conversations/{id}/messages', { params: { path: { id }, ...limit } }),
        ),
      ),
    ),
    runs,
    run: await Promise.all(
      runs.runs.map(async ({ id }) =>
        read(`/api/v1/runs/${id}`, await api.GET('/api/v1/runs/{runId}', { params: { path: { runId: id } } })),
      ),
    ),
    events: await Promise.all(
      runs.runs.map(async ({ id }) => {
        const { data } = await api.GET('/api/v1/runs/{runId}/events', { params: { path: { runId: id } }, parseAs: 'text' });
        return data ?? '';
      }),
    ),
    jwks: read(
      `/api/v1/identity/agents/${agentId}/jwks.json`,
      await api.GET('/api/v1/identity/agents/{agentId}/jwks.json', { params: { path: { agentId } } }),
    ),
  };
}

let expected: Awaited<ReturnType<typeof snapshot>>;
let knowledgeBaseId: string;

beforeAll(async () => {
  source = await startApp();
  ({ id: tenantId, key } = await source.tenant('acme'));
  agentId = (await source.agent(key, { name: 'keeper' })).id;
  for (const message of ['first question', '/tool unknown_tool {}\nsecond question']) {
    const res = await execute(source.api(key), agentId, { message });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  }
  // The agent's key made and sealed (an SVID signs with the platform key, sealed too). The generated
  // types require ttlSeconds (a field with a default): it is sent with the default, here and below.
  const svid = await source.api(key).POST('/api/v1/identity/agents/{agentId}/svid', {
    params: { path: { agentId } },
    body: { audience: 'https://api.example', ttlSeconds: SVID_DEFAULT_TTL_S },
  });
  expect(svid.response.status).toBe(200);
  // A knowledge base with a document, indexed: exported with its bytes, indexed again where imported.
  const base = await source.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Handbook' } });
  expect(base.response.status, JSON.stringify(base.error)).toBe(201);
  knowledgeBaseId = base.data!.id;
  const doc = await source.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
    params: { path: { id: knowledgeBaseId } },
    body: { content: '# Parking\n\nVisitors park by the north entrance.', mediaType: 'text/markdown', title: 'Parking', tags: ['site'] },
  });
  expect(doc.response.status, JSON.stringify(doc.error)).toBe(202);
  await vi.waitFor(
    async () => {
      const read = await source.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
        params: { path: { id: knowledgeBaseId, documentId: doc.data!.id } },
      });
      expect(read.data?.status).toBe('ready');
    },
    { timeout: 30_000, interval: 50 },
  );
  expected = await snapshot(source.api(key));
});
afterAll(async () => {
  await source?.close();
  for (const d of fresh) await d.drop();
  fs.rmSync(files, { recursive: true, force: true });
});

/** A fresh, empty database with the source's master key copied into its data folder. */
async function freshDatabase(): Promise<TestDatabase> {
  const d = await createTestDatabase();
  fresh.push(d);
  fs.copyFileSync(path.join(source.config.dataDir, 'master.key'), path.join(d.env.DATA_DIR, 'master.key'));
  return d;
}

/** Starts the built server on `env` and reads the snapshot back with `apiKey`, then checks that the agent can still be issued an SVID. */
async function restoredSnapshot(env: Record<string, string | undefined>, apiKey: string) {
  const server = await startServer(env);
  try {
    const client = new Agentry({ baseUrl: server.url, apiKey });
    const got = await snapshot(client.api);
    const svid = await client.api.POST('/api/v1/identity/agents/{agentId}/svid', {
      params: { path: { agentId } },
      body: { audience: 'https://api.example', ttlSeconds: SVID_DEFAULT_TTL_S },
    });
    expect(svid.response.status).toBe(200);
    return got;
  } finally {
    await server.stop();
  }
}

describe('agentry export, then agentry import into a fresh database', () => {
  it('brings knowledge bases and their documents, which the restored server indexes again', async () => {
    const out = path.join(files, 'acme-knowledge.jsonl');
    const exported = await cli(
      ['export', '--tenant', tenantId, '--out', out],
      source.config.databaseUrl
        ? { DATA_DIR: source.config.dataDir, DATABASE_URL: source.config.databaseUrl }
        : { DATA_DIR: source.config.dataDir, DATABASE_URL: '' },
    );
    expect(exported.code, exported.stderr).toBe(0);
    const lines = fs
      .readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.table === 'knowledge_bases')).toHaveLength(1);
    const [document] = lines.filter((l) => l.table === 'knowledge_documents');
    expect(Buffer.from(document.row.content.$bytes, 'base64').toString()).toBe('# Parking\n\nVisitors park by the north entrance.');
    expect(lines.some((l) => l.table === 'knowledge_chunks')).toBe(false);

    const target = await freshDatabase();
    const imported = await cli(['import', '--file', out, '--json'], target.env);
    expect(imported.code, imported.stderr).toBe(0);
    const result = JSON.parse(imported.stdout);
    expect(result.counts).toMatchObject({ knowledge_bases: 1, knowledge_documents: 1 });
    const server = await startServer(target.env);
    try {
      const client = new Agentry({ baseUrl: server.url, apiKey: result.key });
      const read = () =>
        client.api.GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
          params: { path: { id: knowledgeBaseId, documentId: document.row.id } },
        });
      await expect.poll(async () => (await read()).data?.status, { timeout: 30_000 }).toBe('ready');
      expect((await read()).data).toMatchObject({ title: 'Parking', tags: ['site'], version: 1, indexedVersion: 1 });
      const found = await client.api.POST('/api/v1/knowledge-bases/{id}/search', {
        params: { path: { id: knowledgeBaseId } },
        body: { query: 'where do visitors park', mode: 'lexical' },
      });
      expect(found.data!.passages.map((p) => p.citation.documentId)).toEqual([document.row.id]);
    } finally {
      await server.stop();
    }
  });

  it('serves the same agents, conversations, runs and agent keys; old API keys come back revoked, a new one is printed', async () => {
    const out = path.join(files, 'acme.jsonl');
    const exported = await cli(
      ['export', '--tenant', tenantId, '--out', out],
      source.config.databaseUrl
        ? { DATA_DIR: source.config.dataDir, DATABASE_URL: source.config.databaseUrl }
        : { DATA_DIR: source.config.dataDir, DATABASE_URL: '' },
    );
    expect(exported.code, exported.stderr).toBe(0);

    const target = await freshDatabase();
    const imported = await cli(['import', '--file', out, '--json'], target.env);
    expect(imported.code, imported.stderr).toBe(0);
    const result = JSON.parse(imported.stdout);
    expect(result.tenantId).toBe(tenantId);
    expect(result.counts.agents).toBe(1);
    expect(result.counts.runs).toBe(2);

    expect(await restoredSnapshot(target.env, result.key)).toEqual(expected);
    // The old key's secret never left the source: it does not open the restored instance.
    const keys = await cli(['keys', 'list', '--tenant', tenantId, '--all', '--json'], target.env);
    const listed = JSON.parse(keys.stdout).apiKeys as { name: string; revokedAt: string | null }[];
    expect(listed.filter((k) => k.revokedAt === null).map((k) => k.name)).toEqual(['after import']);

    // Twice is refused, and nothing is written.
    const again = await cli(['import', '--file', out], target.env);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`tenant ${tenantId} is already in this database`);
  });

  it('refuses a file that is not an export, naming the line', async () => {
    const bad = path.join(files, 'bad.jsonl');
    fs.writeFileSync(bad, `${JSON.stringify({ table: 'tenants', row: { id: 'x', name: 'x' } })}\n{"table":"secrets","row":{}}\n`);
    const target = await freshDatabase();
    const res = await cli(['import', '--file', bad], target.env);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('line 2: expected {"table": one of tenants, api_keys');
    expect(JSON.parse((await cli(['tenants', 'list', '--json'], target.env)).stdout).tenants).toEqual([]);
  });

  it('refuses a knowledge document without its bytes, naming the line, and writes nothing', async () => {
    const bad = path.join(files, 'no-bytes.jsonl');
    const document = { id: 'doc-1', tenant_id: 't-1', knowledge_base_id: 'kb-1', version: 1, title: 'Parking' };
    fs.writeFileSync(
      bad,
      `${JSON.stringify({ table: 'tenants', row: { id: 't-1', name: 'x' } })}\n${JSON.stringify({ table: 'knowledge_documents', row: document })}\n`,
    );
    const target = await freshDatabase();
    const res = await cli(['import', '--file', bad], target.env);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('line 2: a row of knowledge_documents lacks content');
    expect(JSON.parse((await cli(['tenants', 'list', '--json'], target.env)).stdout).tenants).toEqual([]);
  });
});

describe.runIf(dialect === 'sqlite')('agentry backup of a running SQLite server', () => {
  it('is a consistent copy: with its master key, a server on it serves the same data', async () => {
    const out = path.join(files, 'online.sqlite');
    const res = await cli(['backup', '--out', out], { DATA_DIR: source.config.dataDir, DATABASE_URL: '' });
    expect(res.code, res.stderr).toBe(0);
    expect(fs.statSync(out).mode & 0o777).toBe(0o600);
    const target = await freshDatabase();
    fs.copyFileSync(out, path.join(target.env.DATA_DIR, 'agentry.sqlite'));
    expect(await restoredSnapshot(target.env, key)).toEqual(expected);
  });
});

describe.runIf(dialect === 'postgres')('pg_dump and pg_restore of PostgreSQL', () => {
  it('with the master key: a server on the restored database serves the same data', async () => {
    const dump = path.join(files, 'agentry.dump');
    await exec('pg_dump', ['--format=custom', `--file=${dump}`, `--dbname=${source.config.databaseUrl}`]);
    const target = await freshDatabase();
    await exec('pg_restore', ['--no-owner', `--dbname=${target.env.DATABASE_URL}`, dump]);
    expect(await restoredSnapshot(target.env, key)).toEqual(expected);
  });
});
