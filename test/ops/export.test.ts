import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialect, startApp, type TestApp } from '../helpers/app.js';
import { cli } from '../helpers/process.js';
import { multipartFile } from '../skills/helpers.js';

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
  const agent = await t.agent(key, { name });
  const executed = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, {
    key,
    body: { message: `/tool nothing {}\nhi ${name}` },
  });
  expect(executed.status, executed.text).toBe(200);
  const file = await t.request('POST', '/api/v1/files', { key, ...multipartFile(`${name}.txt`, `notes of ${name}`, 'text/plain') });
  expect(file.status).toBe(201);
  const task = await t.request('POST', '/api/v1/tasks', {
    key,
    body: { name: `${name} task`, agentId: agent.id, type: 'one_time', input: 'x' },
  });
  return {
    agent,
    runId: executed.body.runId as string,
    conversationId: executed.body.conversationId as string,
    fileId: file.body.id as string,
    taskStatus: task.status,
    taskId: task.body?.id as string | undefined,
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
    if (made.taskId) expect(rows('tasks').map((r) => r.id)).toEqual([made.taskId]);

    // Every line is the tenant's: none names the other tenant or its rows.
    for (const l of lines) {
      if ('tenant_id' in l.row) expect(l.row.tenant_id).toBe(mine.id);
    }
    const text = run.stdout;
    for (const id of [other.id, theirs.agent.id, theirs.runId, theirs.conversationId, theirs.fileId]) expect(text).not.toContain(id);
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
