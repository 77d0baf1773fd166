import fs from 'node:fs';
import path from 'node:path';
import type { LLMock } from '@copilotkit/aimock';
import { Agentry } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { embeddingsWithUsage, providerEnv, startAimock } from '../helpers/aimock.js';
import { createTestDatabase, startApp, type TestApp, type TestDatabase } from '../helpers/app.js';
import { cli, startServer } from '../helpers/process.js';
import { sample } from '../metrics/helpers.js';

/**
 * Knowledge's usage rows live as the tenant's other data does (docs/knowledge.md, "Usage"): the
 * retention sweep deletes those recorded longer ago than the tenant's runsDays (the runs' usage report
 * follows the same setting), counted in its pass and its metrics; `agentry export` writes them and
 * `agentry import` puts them back, so the restored server reports the same tokens. Tokens come from
 * aimock behind a proxy that reports each text's words as its tokens. The sweep runs on the app's
 * ManualClock (RETENTION_SWEEP_SECONDS=0: the test runs each pass itself).
 */

const EMBEDDING = 'openai/text-embedding-3-small';
const DAY = 24 * 3600 * 1000;
const METRICS_TOKEN = 'usage-lifecycle-metrics-token';
const clock = new ManualClock();
let mock: LLMock;
let provider: Awaited<ReturnType<typeof embeddingsWithUsage>>;
let t: TestApp;
const fresh: TestDatabase[] = [];
const files = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'agentry-kusage-'));

beforeAll(async () => {
  mock = await startAimock();
  provider = await embeddingsWithUsage(mock);
  t = await startApp({ ...providerEnv(mock), OPENAI_BASE_URL: provider.url, RETENTION_SWEEP_SECONDS: '0', METRICS_TOKEN }, { clock });
});
afterAll(async () => {
  await t?.close();
  await provider?.stop();
  await mock?.stop();
  for (const d of fresh) await d.drop();
  fs.rmSync(files, { recursive: true, force: true });
});

/** A base embedded by a provider, a document ingested and one search: an `ingestion` and a `query` row. */
async function spend(key: string, name: string) {
  const api = t.api(key);
  const base = await api.POST('/api/v1/knowledge-bases', { body: { name, embeddingModel: EMBEDDING } });
  expect(base.response.status, JSON.stringify(base.error)).toBe(201);
  const baseId = base.data!.id;
  const doc = await api.POST('/api/v1/knowledge-bases/{id}/documents', {
    params: { path: { id: baseId } },
    body: { content: `The ${name} shed is painted green every third summer.` },
  });
  expect(doc.response.status, JSON.stringify(doc.error)).toBe(202);
  await vi.waitFor(
    async () => {
      const read = await api.GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
        params: { path: { id: baseId, documentId: doc.data!.id } },
      });
      expect(read.data?.status).toBe('ready');
    },
    { timeout: 30_000, interval: 50 },
  );
  const found = await api.POST('/api/v1/knowledge-bases/{id}/search', {
    params: { path: { id: baseId } },
    body: { query: `when is the ${name} shed painted` },
  });
  expect(found.response.status, JSON.stringify(found.error)).toBe(200);
  return { baseId, documentId: doc.data!.id };
}

/** The tenant's usage report over the last 30 days (the rows are stamped in real time, today). */
async function report(api: ReturnType<TestApp['api']>) {
  const { data, error, response } = await api.GET('/api/v1/knowledge-usage', { params: { query: {} } });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!.rows;
}
const kindsOf = (rows: Awaited<ReturnType<typeof report>>, baseId: string) =>
  rows
    .filter((r) => r.knowledgeBaseId === baseId)
    .map((r) => r.kind)
    .sort();

/** When the tenant's last usage row was recorded, as stored (the report only says the day). */
async function lastRecorded(tenantId: string) {
  const rows = await t.db.kysely.selectFrom('knowledge_usage').select('created_at').where('tenant_id', '=', tenantId).execute();
  expect(rows.length).toBeGreaterThan(0);
  return rows
    .map((r) => r.created_at)
    .sort()
    .at(-1)!;
}

describe('the retention sweep and knowledge usage', () => {
  it('deletes the rows recorded before the tenant’s runsDays, keeps the newer ones and those of a tenant keeping runs forever', async () => {
    const a = await t.tenant('runs-30-days');
    const b = await t.tenant('keeps-runs');
    // Conversations, files and audit events at their shortest: none of them decides knowledge usage.
    const set = await t.api(a.key).PUT('/api/v1/retention', { body: { runsDays: 30 } });
    expect(set.response.status, JSON.stringify(set.error)).toBe(200);
    const setB = await t.api(b.key).PUT('/api/v1/retention', { body: { conversationsDays: 1, filesDays: 1, auditEventsDays: 30 } });
    expect(setB.response.status, JSON.stringify(setB.error)).toBe(200);

    const oldA = await spend(a.key, 'old-a');
    const oldB = await spend(b.key, 'old-b');
    const boundary = [await lastRecorded(a.id), await lastRecorded(b.id)].sort().at(-1)!;
    // The next rows are stamped at least a millisecond after the old ones.
    await vi.waitFor(() => expect(new Date().toISOString() > boundary).toBe(true), { timeout: 1_000, interval: 1 });
    const newA = await spend(a.key, 'new-a');
    const before = { a: await report(t.api(a.key)), b: await report(t.api(b.key)) };
    expect(kindsOf(before.a, oldA.baseId)).toEqual(['ingestion', 'query']);
    expect(kindsOf(before.a, newA.baseId)).toEqual(['ingestion', 'query']);
    expect(kindsOf(before.b, oldB.baseId)).toEqual(['ingestion', 'query']);

    const sweep = t.services.retention.sweep;
    try {
      // A day short of thirty: nothing of A's is old enough.
      clock.set(Date.parse(boundary) + 29 * DAY);
      expect((await sweep.sweepOnce()).knowledgeUsage).toBe(0);
      expect(await report(t.api(a.key))).toEqual(before.a);

      // Thirty days after the old rows: A's old rows go, its new ones stay; B keeps runs forever, and all its rows.
      clock.set(Date.parse(boundary) + 1 + 30 * DAY);
      const pass = await sweep.sweepOnce();
      expect(pass.knowledgeUsage).toBe(2);
      expect(pass.failures).toBe(0);
      const afterA = await report(t.api(a.key));
      expect(kindsOf(afterA, oldA.baseId)).toEqual([]);
      expect(afterA).toEqual(before.a.filter((r) => r.knowledgeBaseId !== oldA.baseId));
      expect(await report(t.api(b.key))).toEqual(before.b);
      // A second pass finds nothing more.
      expect((await sweep.sweepOnce()).knowledgeUsage).toBe(0);

      const metrics = await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect(metrics.status).toBe(200);
      expect(sample(metrics.text, 'agentry_retention_deleted_total', { kind: 'knowledge_usage' })).toBe(2);
      expect(sample(metrics.text, 'agentry_retention_deleted_rows_total', { table: 'knowledge_usage' })).toBe(2);
    } finally {
      clock.set(Date.now());
    }
  });
});

describe('agentry export and import of knowledge usage', () => {
  it('writes the tenant’s usage rows and no other tenant’s; imported, the restored server reports the same tokens', async () => {
    const mine = await t.tenant('exported-usage');
    const other = await t.tenant('not-exported-usage');
    const { baseId, documentId } = await spend(mine.key, 'mine');
    const theirs = await spend(other.key, 'theirs');
    const expected = await report(t.api(mine.key));
    expect(kindsOf(expected, baseId)).toEqual(['ingestion', 'query']);

    const out = path.join(files, `usage-${mine.id}.jsonl`);
    const exported = await cli(['export', '--tenant', mine.id, '--out', out], {
      DATA_DIR: t.config.dataDir,
      DATABASE_URL: t.config.databaseUrl ?? '',
    });
    expect(exported.code, exported.stderr).toBe(0);
    const lines = fs
      .readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { table: string; row: Record<string, unknown> });
    const usageLines = lines.filter((l) => l.table === 'knowledge_usage').map((l) => l.row);
    const stored = await t.db.kysely.selectFrom('knowledge_usage').selectAll().where('tenant_id', '=', mine.id).execute();
    expect(stored).toHaveLength(2);
    expect(usageLines.sort((x, y) => String(x.id).localeCompare(String(y.id)))).toEqual(
      stored.sort((x, y) => x.id.localeCompare(y.id)).map((r) => ({ ...r })),
    );
    expect(usageLines.find((r) => r.kind === 'ingestion')).toMatchObject({ document_id: documentId, knowledge_base_id: baseId });
    expect(fs.readFileSync(out, 'utf8')).not.toContain(theirs.baseId);

    const target = await createTestDatabase();
    fresh.push(target);
    fs.copyFileSync(path.join(t.config.dataDir, 'master.key'), path.join(target.env.DATA_DIR, 'master.key'));
    const imported = await cli(['import', '--file', out, '--json'], target.env);
    expect(imported.code, imported.stderr).toBe(0);
    const result = JSON.parse(imported.stdout) as { key: string; counts: Record<string, number> };
    expect(result.counts.knowledge_usage).toBe(2);

    // No provider here: the imported document's indexing fails without spending, so the report is the source's.
    const server = await startServer({ ...target.env, OPENAI_API_KEY: '', OPENAI_BASE_URL: '' });
    try {
      const client = new Agentry({ baseUrl: server.url, apiKey: result.key });
      await expect
        .poll(
          async () =>
            (
              await client.api.GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
                params: { path: { id: baseId, documentId } },
              })
            ).data?.status,
          { timeout: 30_000 },
        )
        .toBe('failed');
      expect((await client.usage.knowledge()).rows).toEqual(expected);
    } finally {
      await server.stop();
    }
  });
});
