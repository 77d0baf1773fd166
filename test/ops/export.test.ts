import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialect, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { cli } from '../helpers/process.js';
import { uploadFile } from '../helpers/upload.js';
import { createTask } from '../tasks/helpers.js';

/**
 * `agentry export --tenant <id>` (dist/cli.js, a real process) against a database the app filled over
 * HTTP: one JSON line per row of the tenant, every table of it, none of another tenant's, no key hash.
 */

let t: TestApp;
let env: Record<string, string>;

beforeAll(async () => {
  t = await startApp();
  env = { DATA_DIR: t.config.dataDir, DATABASE_URL: t.config.databaseUrl ?? '' };
});
afterAll(() => t?.close());

interface Line {
  table: string;
  row: Record<string, unknown>;
}

async function fill(key: string, name: string) {
  const api = t.api(key);
  const agent = await t.agent(key, { name });
  const executed = await execute(api, agent.id, { message: `/tool nothing {}\nhi ${name}` });
  expect(executed.response.status, JSON.stringify(executed.error)).toBe(200);
  const file = await uploadFile(api, `${name}.txt`, `notes of ${name}`, 'text/plain');
  expect(file.response.status).toBe(201);
  // Scheduled once a year, so it adds a task row and no run before the export.
  const task = await createTask(t, key, { name: `${name} task`, agentId: agent.id, type: 'scheduled', schedule: '0 0 1 1 *' });
  return {
    agent,
    runId: executed.run!.runId,
    conversationId: executed.run!.conversationId,
    fileId: file.data!.id,
    taskId: task.id,
  };
}

describe('agentry export', () => {
  it('writes every row of the tenant as JSON lines, and nothing of another tenant', async () => {
    const mine = await t.tenant('exported');
    const other = await t.tenant('not-exported');
    const made = await fill(mine.key, 'mine');
    const theirs = await fill(other.key, 'theirs');

    const run = await cli(['export', '--tenant', mine.id], env);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    const rows = (table: string) => lines.filter((l) => l.table === table).map((l) => l.row);
    expect(run.stderr).toMatch(new RegExp(`^exported ${lines.length} rows of tenant ${mine.id}`));

    expect(rows('tenants')).toEqual([expect.objectContaining({ id: mine.id, name: 'exported' })]);
    const keys = rows('api_keys');
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toHaveProperty('secret_hash');
    expect(rows('agents').map((r) => r.id)).toEqual([made.agent.id]);
    expect(rows('conversations').map((r) => r.id)).toEqual([made.conversationId]);
    expect(rows('messages').map((r) => r.role)).toEqual(['user', 'assistant']);
    expect(rows('runs').map((r) => r.id)).toEqual([made.runId]);
    const events = rows('run_events');
    expect(events.length).toBeGreaterThan(2);
    expect(new Set(events.map((e) => e.run_id))).toEqual(new Set([made.runId]));
    expect(events.map((e) => e.event)).toContain('done');
    expect(rows('files')).toEqual([expect.objectContaining({ id: made.fileId, name: 'mine.txt' })]);
    expect(rows('audit_events').map((r) => r.action)).toContain('agent.created');
    expect(rows('tasks').map((r) => r.id)).toEqual([made.taskId]);

    // Every line is the tenant's: none names the other tenant or its rows.
    for (const l of lines) {
      if ('tenant_id' in l.row) expect(l.row.tenant_id).toBe(mine.id);
    }
    const text = run.stdout;
    for (const id of [other.id, theirs.agent.id, theirs.runId, theirs.conversationId, theirs.fileId, theirs.taskId])
      expect(text).not.toContain(id);
  });

  it('writes to a new private file with --out, and refuses an unknown tenant', async () => {
    const mine = await t.tenant('to-file');
    await fill(mine.key, 'file');
    const out = path.join(t.config.dataDir, `export-${mine.id}.jsonl`);
    const run = await cli(['export', '--tenant', mine.id, '--out', out], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('');
    expect(fs.statSync(out).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(out, 'utf8').trim().split('\n').length).toBeGreaterThan(5);
    // An existing file is never overwritten.
    expect((await cli(['export', '--tenant', mine.id, '--out', out], env)).code).not.toBe(0);

    const unknown = await cli(['export', '--tenant', '0192f3a4-5b6c-7d8e-9f01-23456789abcd'], env);
    expect(unknown.code).toBe(2);
    expect((await cli(['export'], env)).stderr).toMatch(/export needs --tenant/);
  });
  it('waits out a slow file without piling up listeners: rows larger than its buffer, each a wait, no leak warning', async () => {
    const mine = await t.tenant('backpressure');
    // Each agent's line is larger than the file stream's 16 KiB buffer, so every write waits for 'drain'.
    const prompt = 'x'.repeat(40_000);
    const ids: string[] = [];
    for (let i = 0; i < 15; i++) ids.push((await t.agent(mine.key, { name: `big ${i}`, systemPrompt: prompt })).id);
    const out = path.join(t.config.dataDir, `export-big-${mine.id}.jsonl`);
    const run = await cli(['export', '--tenant', mine.id, '--out', out], env);
    expect(run.code, run.stderr).toBe(0);
    // Node warns once more than 10 listeners of one event wait on one stream.
    expect(run.stderr).not.toMatch(/MaxListenersExceededWarning/);
    expect(run.stderr).toMatch(new RegExp(`^exported \\d+ rows of tenant ${mine.id} to `));
    const agents = fs
      .readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.table === 'agents');
    expect(new Set(agents.map((l) => l.row.id))).toEqual(new Set(ids));
    expect(agents.every((l) => l.row.system_prompt === prompt)).toBe(true);
  });

  it('pages through tables of more rows than a page (500), keyed by one column or two, each row once', async () => {
    const mine = await t.tenant('paged');
    const other = await t.tenant('paged-other');
    const agent = await t.agent(mine.key, { name: 'paged' });
    const runIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      const executed = await execute(t.api(mine.key), agent.id, { message: `hi ${i}` });
      expect(executed.response.status, JSON.stringify(executed.error)).toBe(200);
      runIds.push(executed.run!.runId);
    }
    // Written straight to the tables: over HTTP these counts would take minutes.
    const db = t.db.kysely;
    const audit = (tenantId: string, i: number) => ({
      id: randomUUID(),
      tenant_id: tenantId,
      actor_type: 'system',
      actor_id: null,
      action: `paged.${i}`,
      resource_type: 'test',
      resource_id: null,
      detail: '{}',
      created_at: new Date().toISOString(),
    });
    await db
      .insertInto('audit_events')
      .values(Array.from({ length: 1100 }, (_, i) => audit(mine.id, i)))
      .execute();
    await db.insertInto('audit_events').values(audit(other.id, 0)).execute();
    for (const runId of runIds) {
      // Past the run's own events (seq from 1000): two runs of more than a page each, in (run_id, seq) order.
      await db
        .insertInto('run_events')
        .values(Array.from({ length: 600 }, (_, i) => ({ run_id: runId, seq: 1000 + i, event: 'delta', data: '{}' })))
        .execute();
    }

    const run = await cli(['export', '--tenant', mine.id], env);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    const rows = (table: string) => lines.filter((l) => l.table === table).map((l) => l.row);

    const stored = await db.selectFrom('audit_events').select('id').where('tenant_id', '=', mine.id).execute();
    const audits = rows('audit_events').map((r) => r.id as string);
    expect(stored.length).toBeGreaterThan(1100);
    expect(new Set(audits).size).toBe(audits.length);
    expect(new Set(audits)).toEqual(new Set(stored.map((r) => r.id)));

    const storedEvents = await db.selectFrom('run_events').select(['run_id', 'seq']).where('run_id', 'in', runIds).execute();
    const events = rows('run_events').map((r) => `${r.run_id}/${r.seq}`);
    expect(storedEvents.length).toBeGreaterThan(1200);
    expect(new Set(events).size).toBe(events.length);
    expect(new Set(events)).toEqual(new Set(storedEvents.map((r) => `${r.run_id}/${r.seq}`)));
  });
});

describe.runIf(dialect === 'sqlite')('agentry vacuum', () => {
  it('converts a database made before incremental auto-vacuum', async () => {
    const database = await createTestDatabase();
    try {
      const file = path.join(database.env.DATA_DIR, 'agentry.sqlite');
      // As an older version left it: tables made without auto_vacuum.
      const old = new SQLite(file);
      old.pragma('journal_mode = WAL');
      old.exec('create table leftover (x)');
      old.close();
      const run = await cli(['vacuum', '--json'], database.env);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ autoVacuumBefore: 0, autoVacuumAfter: 2 });
    } finally {
      await database.drop();
    }
  });
});
