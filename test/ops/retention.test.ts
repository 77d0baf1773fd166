import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { conversationRetention } from '../../src/conversations/retention.js';
import { KnowledgeUsage } from '../../src/knowledge/usage/service.js';
import { RetentionSweep } from '../../src/retention/sweep.js';
import { runRetention } from '../../src/runs/retention.js';
import { RetentionSettingsService } from '../../src/tenancy/retention.js';
import { dialect, startApp, type TestApp } from '../helpers/app.js';
import { endedRun, pendingOf } from '../approvals/helpers.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { uploadFile } from '../helpers/upload.js';

/**
 * Retention: a tenant's settings (GET/PUT /api/v1/retention) and the sweep that applies them, driven
 * on a ManualClock: what is older than a setting is gone, what is newer stays, another tenant's data
 * follows its own (default) settings, and a compacted run still answers with its output and steps.
 * The background loop is off (RETENTION_SWEEP_SECONDS=0): the test runs each pass itself.
 */

let t: TestApp;
const DAY = 24 * 3600 * 1000;
const METRICS_TOKEN = 'retention-metrics-token';
/** The app's clock: the app's own sweep (and its metrics) is driven on it. */
const clock = new ManualClock();

beforeAll(async () => {
  t = await startApp({ RETENTION_SWEEP_SECONDS: '0', METRICS_TOKEN: METRICS_TOKEN }, { clock });
});
afterAll(() => t?.close());

/**
 * A sweep of the app's data, built as the app builds its own, whose clock alone is at `at`: the
 * rest of the app keeps its time (a run waiting for approval stays waiting).
 */
function sweepAt(at: number, options: { batchSize?: number } = {}) {
  return new RetentionSweep({
    db: t.db,
    tenants: new RetentionSettingsService({ db: t.db, tenancy: t.services.tenancy }),
    runs: runRetention(t.db, t.services.approvals),
    conversations: conversationRetention(t.db),
    knowledge: {
      deleteUsageBefore: (tenantId, cutoff, limit) => new KnowledgeUsage(t.db, t.app.log).deleteRecordedBefore(tenantId, cutoff, limit),
    },
    log: t.app.log,
    intervalMs: 0,
    clock: new ManualClock(at),
    ...options,
  });
}

const runPath = (runId: string) => ({ params: { path: { runId } } });

const eventsOf = async (key: string, runId: string) => {
  const { data, error, response } = await t.api(key).GET('/api/v1/runs/{runId}/events', { ...runPath(runId), parseAs: 'text' });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return [...data!.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
};

/** A conversation with one run (a tool call and an answer), a file and an audit event (the agent's creation). */
async function someData(key: string, name: string) {
  const api = t.api(key);
  const agent = await t.agent(key, { name });
  const executed = await execute(api, agent.id, { message: `/tool unknown_tool {}\nhello from ${name}` });
  expect(executed.response.status, JSON.stringify(executed.error)).toBe(200);
  const { runId, conversationId } = executed.run!;
  const file = await uploadFile(api, `${name}.txt`, name, 'text/plain');
  expect(file.response.status, JSON.stringify(file.error)).toBe(201);
  const run = (await api.GET('/api/v1/runs/{runId}', runPath(runId))).data!;
  const conversation = (await api.GET('/api/v1/conversations/{id}', { params: { path: { id: conversationId } } })).data!;
  const audit = (await api.GET('/api/v1/audit-events', { params: { query: { resourceId: agent.id } } })).data!.events;
  expect(audit.length).toBeGreaterThan(0);
  const stamps = [
    run.createdAt,
    run.completedAt,
    conversation.updatedAt ?? conversation.createdAt,
    file.data!.createdAt,
    ...audit.map((e) => e.createdAt),
  ];
  return {
    agent,
    runId,
    run,
    conversationId,
    fileId: file.data!.id,
    auditIds: audit.map((e) => e.id),
    latest: stamps.sort().at(-1) as string,
    earliest: stamps.sort()[0] as string,
  };
}

describe('retention settings', () => {
  it('answers the documented defaults, takes partial updates and refuses what is not a whole number of days', async () => {
    const { key } = await t.tenant();
    const api = t.api(key);
    const defaults = await api.GET('/api/v1/retention');
    expect(defaults.response.status).toBe(200);
    expect(defaults.data).toEqual({
      runsDays: null,
      conversationsDays: null,
      filesDays: null,
      auditEventsDays: null,
      runEventsCompactAfterDays: 7,
    });

    const set = await api.PUT('/api/v1/retention', { body: { runsDays: 90, runEventsCompactAfterDays: null } });
    expect(set.response.status).toBe(200);
    expect(set.data).toEqual({
      runsDays: 90,
      conversationsDays: null,
      filesDays: null,
      auditEventsDays: null,
      runEventsCompactAfterDays: null,
    });
    expect((await api.GET('/api/v1/retention')).data).toEqual(set.data);

    const bad = await api.PUT('/api/v1/retention', { body: { runsDays: 0.5 } });
    expect(bad.response.status).toBe(400);
    expect(JSON.stringify(bad.error)).toContain('runsDays');
    // The audit trail is kept at least 30 days: a settings:write key cannot erase its own changes overnight.
    const shortAudit = await api.PUT('/api/v1/retention', { body: { auditEventsDays: 29 } });
    expect(shortAudit.response.status).toBe(400);
    expect(JSON.stringify(shortAudit.error)).toContain('auditEventsDays');
    expect((await api.PUT('/api/v1/retention', { body: { auditEventsDays: 30 } })).response.status).toBe(200);
    expect((await api.PUT('/api/v1/retention', { body: { auditEventsDays: null } })).response.status).toBe(200);
    // A field the types do not have: raw.
    const unknown = await t.raw('PUT', '/api/v1/retention', { key, body: { messagesDays: 3 } });
    expect(unknown.status).toBe(400);

    const reader = await t.key(key, ['settings:read']);
    expect((await t.api(reader).GET('/api/v1/retention')).response.status).toBe(200);
    expect((await t.api(reader).PUT('/api/v1/retention', { body: { runsDays: 1 } })).response.status).toBe(403);
    const agentsOnly = await t.key(key, ['agents:read']);
    expect((await t.api(agentsOnly).GET('/api/v1/retention')).response.status).toBe(403);
  });

  it('keeps every field of concurrent changes of different fields: none overwrites another with the value it read', async () => {
    const { key } = await t.tenant();
    for (let round = 1; round <= 5; round++) {
      const bodies = [
        { runsDays: round },
        { conversationsDays: round + 100 },
        { filesDays: round + 200 },
        { auditEventsDays: round + 300 },
      ];
      const answers = await Promise.all(bodies.map((body) => t.api(key).PUT('/api/v1/retention', { body })));
      for (const res of answers) expect(res.response.status, JSON.stringify(res.error)).toBe(200);
      expect((await t.api(key).GET('/api/v1/retention')).data).toEqual({
        runsDays: round,
        conversationsDays: round + 100,
        filesDays: round + 200,
        auditEventsDays: round + 300,
        runEventsCompactAfterDays: 7,
      });
    }
  });
});

describe('the retention sweep', () => {
  it('compacts, then deletes what is older than each setting and keeps what is newer, tenant by tenant', async () => {
    const a = await t.tenant('kept-30-days');
    const b = await t.tenant('defaults');
    const set = await t.api(a.key).PUT('/api/v1/retention', {
      body: { runsDays: 30, conversationsDays: 30, filesDays: 30, auditEventsDays: 30, runEventsCompactAfterDays: 1 },
    });
    expect(set.response.status).toBe(200);

    const oldA = await someData(a.key, 'old-a');
    const oldB = await someData(b.key, 'old-b');
    const boundary = [oldA.latest, oldB.latest].sort().at(-1)!;
    // The next rows are stamped at least a millisecond after the old ones.
    await vi.waitFor(() => expect(new Date().toISOString() > boundary).toBe(true), { timeout: 1_000, interval: 1 });
    const newA = await someData(a.key, 'new-a');
    expect(newA.earliest > boundary).toBe(true);

    const sweep = t.services.retention.sweep;
    clock.set(Date.parse(boundary) + 1 + DAY);

    // A day after: tenant A's old run is compacted; nothing is deleted, tenant B's default (7 days) not reached.
    const first = await sweep.sweepOnce();
    expect(first).toMatchObject({ runs: 0, compactedRuns: 1, conversations: 0, files: 0, auditEvents: 0 });
    expect(first.compactedEvents).toBeGreaterThan(0);
    expect(await eventsOf(a.key, oldA.runId)).toEqual(['done']);
    const untouched = await eventsOf(a.key, newA.runId);
    expect(untouched.slice(0, 2)).toEqual(['tool_call_start', 'tool_call_end']);
    expect(untouched).toContain('token');
    expect(untouched.at(-1)).toBe('done');
    expect(await eventsOf(b.key, oldB.runId)).toContain('tool_call_start');
    // The compacted run keeps its output, tool calls, steps and cost.
    const apiA = t.api(a.key);
    const compacted = await apiA.GET('/api/v1/runs/{runId}', runPath(oldA.runId));
    expect(compacted.response.status).toBe(200);
    expect(compacted.data).toEqual(oldA.run);
    expect(compacted.data!.output).toMatch(/unknown_tool/);
    expect(compacted.data!.toolCalls).toMatchObject([{ name: 'unknown_tool', outcome: 'error', errorCode: 'invalid_tool_call' }]);
    expect(compacted.data!.steps!.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(compacted.data!.cost).toEqual(expect.any(Number));
    // A second pass finds nothing more to do.
    expect(await sweep.sweepOnce()).toMatchObject({ runs: 0, compactedRuns: 0, compactedEvents: 0 });

    // Thirty days after: tenant A's old rows are gone, its new ones stay; tenant B keeps everything (compacted).
    clock.set(new Date(Date.parse(boundary) + 1 + 30 * DAY));
    const second = await sweep.sweepOnce();
    expect(second).toMatchObject({ runs: 1, conversations: 1, files: 1 });
    expect(second.auditEvents).toBeGreaterThanOrEqual(oldA.auditIds.length);

    // The sweep's work, in the metrics.
    // The metrics endpoint is no operation of the API: raw.
    const metrics = await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/^agentry_retention_sweeps_total 3$/m);
    expect(metrics.text).toMatch(/^agentry_retention_deleted_total\{kind="runs"\} 1$/m);
    expect(metrics.text).toMatch(/^agentry_retention_deleted_total\{kind="files"\} 1$/m);
    expect(metrics.text).toMatch(
      new RegExp(`^agentry_retention_deleted_total\\{kind="run_events"\\} ${first.compactedEvents + second.compactedEvents}$`, 'm'),
    );
    expect(metrics.text).toMatch(new RegExp(`^agentry_retention_compacted_runs_total ${first.compactedRuns + second.compactedRuns}$`, 'm'));
    // The same rows by table, as docs/operations.md lists them.
    expect(metrics.text).toMatch(/^agentry_retention_deleted_rows_total\{table="runs"\} 1$/m);
    expect(metrics.text).toMatch(/^agentry_retention_deleted_rows_total\{table="conversations"\} 1$/m);
    expect(metrics.text).toMatch(
      new RegExp(`^agentry_retention_deleted_rows_total\\{table="run_events"\\} ${first.compactedEvents + second.compactedEvents}$`, 'm'),
    );

    const idPath = (id: string) => ({ params: { path: { id } } });
    expect((await apiA.GET('/api/v1/runs/{runId}', runPath(oldA.runId))).response.status).toBe(404);
    expect((await apiA.GET('/api/v1/conversations/{id}', idPath(oldA.conversationId))).response.status).toBe(404);
    expect((await apiA.GET('/api/v1/files/{id}', idPath(oldA.fileId))).response.status).toBe(404);
    const auditLeft = (await apiA.GET('/api/v1/audit-events', { params: { query: { limit: 100 } } })).data!.events.map((e) => e.id);
    for (const id of oldA.auditIds) expect(auditLeft).not.toContain(id);
    for (const id of newA.auditIds) expect(auditLeft).toContain(id);

    expect((await apiA.GET('/api/v1/runs/{runId}', runPath(newA.runId))).response.status).toBe(200);
    expect((await apiA.GET('/api/v1/conversations/{id}', idPath(newA.conversationId))).response.status).toBe(200);
    const messages = await apiA.GET('/api/v1/conversations/{id}/messages', idPath(newA.conversationId));
    expect(messages.response.status).toBe(200);
    expect((await apiA.GET('/api/v1/files/{id}', idPath(newA.fileId))).response.status).toBe(200);

    const apiB = t.api(b.key);
    expect((await apiB.GET('/api/v1/runs/{runId}', runPath(oldB.runId))).data).toEqual(oldB.run);
    expect(await eventsOf(b.key, oldB.runId)).toEqual(['done']);
    expect((await apiB.GET('/api/v1/files/{id}', idPath(oldB.fileId))).response.status).toBe(200);
    expect((await apiB.GET('/api/v1/conversations/{id}', idPath(oldB.conversationId))).response.status).toBe(200);
  });

  it('deletes in batches: more rows than a batch are all deleted in one pass', async () => {
    const { key } = await t.tenant('many');
    expect((await t.api(key).PUT('/api/v1/retention', { body: { auditEventsDays: 30 } })).response.status).toBe(200);
    // Each agent's creation is an audit event.
    for (let i = 0; i < 7; i++) await t.agent(key, { name: `a${i}` });
    const small = sweepAt(Date.now() + 31 * DAY, { batchSize: 3 });
    const counts = await small.sweepOnce();
    expect(counts.auditEvents).toBeGreaterThanOrEqual(8); // 7 agents and the settings' change, at least
    expect((await t.api(key).GET('/api/v1/audit-events')).data!.total).toBe(0);
  });
});

describe('a deleted run’s approvals', () => {
  it('are deleted with it (their tool-call arguments), and its suspension too', async () => {
    const mcp = await startMcpServer();
    try {
      const { key } = await t.tenant('approvals-kept-30-days');
      const api = t.api(key);
      await api.PUT('/api/v1/retention', { body: { runsDays: 30 } });
      const agent = await t.agent(key, {
        tools: [{ type: 'mcp', url: mcp.url }],
        configuration: { approval: { rules: [{ tool: 'shout', reason: 'loud' }] } },
      });
      const waitOnce = async (text: string) => {
        const { run } = await execute(api, agent.id, { message: `/tool shout {"text":"${text}"}` });
        expect(run?.status).toBe('awaiting_approval');
        const [approval] = await pendingOf(t, key, run!.runId);
        return { runId: run!.runId, approvalId: approval.id };
      };
      // One run approved and completed, one still waiting (active: kept, with its approval and suspension).
      const decided = await waitOnce('secret one');
      const approvalPath = (id: string) => ({ params: { path: { id } } });
      await api.POST('/api/v1/approvals/{id}/approve', { ...approvalPath(decided.approvalId), body: {} });
      expect((await endedRun(t, key, decided.runId)).status).toBe('completed');
      const waiting = await waitOnce('secret two');
      const suspensions = async (runId: string) =>
        (await t.db.kysely.selectFrom('run_suspensions').select('run_id').where('run_id', '=', runId).execute()).length;
      expect(await suspensions(waiting.runId)).toBe(1);

      const sweep = sweepAt(Date.now() + 31 * DAY);
      const counts = await sweep.sweepOnce();
      expect(counts.runs).toBeGreaterThanOrEqual(1);
      expect((await api.GET('/api/v1/runs/{runId}', runPath(decided.runId))).response.status).toBe(404);
      expect((await api.GET('/api/v1/approvals/{id}', approvalPath(decided.approvalId))).response.status).toBe(404);
      const left = await t.db.kysely.selectFrom('tool_approvals').select('id').where('run_id', '=', decided.runId).execute();
      expect(left).toEqual([]);
      // The waiting run has not ended: it stays, with what resuming it needs.
      expect((await api.GET('/api/v1/runs/{runId}', runPath(waiting.runId))).data!.status).toBe('awaiting_approval');
      expect((await api.GET('/api/v1/approvals/{id}', approvalPath(waiting.approvalId))).data!.status).toBe('pending');
      expect(await suspensions(waiting.runId)).toBe(1);
      await api.POST('/api/v1/runs/{runId}/cancel', runPath(waiting.runId));
      // Cancelled, it is deleted at the next pass with its (cancelled) approval.
      await sweep.sweepOnce();
      expect((await api.GET('/api/v1/runs/{runId}', runPath(waiting.runId))).response.status).toBe(404);
      expect((await api.GET('/api/v1/approvals/{id}', approvalPath(waiting.approvalId))).response.status).toBe(404);
      expect(await suspensions(waiting.runId)).toBe(0);
    } finally {
      await mcp.close();
    }
  });
});

describe.runIf(dialect === 'sqlite')('space handed back on SQLite', () => {
  it('a new database is in incremental auto-vacuum, and a sweep that deleted rows returns their pages', async () => {
    const { key } = await t.tenant('big-files');
    for (let i = 0; i < 8; i++) {
      const res = await uploadFile(t.api(key), `big-${i}.bin`, randomBytes(256 * 1024), 'application/octet-stream');
      expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    }
    await t.api(key).PUT('/api/v1/retention', { body: { filesDays: 1 } });
    const { rows } = await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(t.db.kysely);
    expect(rows[0].auto_vacuum).toBe(2);

    const sweep = sweepAt(Date.now() + 2 * DAY);
    const counts = await sweep.sweepOnce();
    expect(counts.files).toBeGreaterThanOrEqual(8);
    // 2 MiB of files, in base64: hundreds of 4 KiB pages.
    expect(counts.reclaimedPages).toBeGreaterThan(300);
    const free = await sql<{ freelist_count: number }>`pragma freelist_count`.execute(t.db.kysely);
    expect(free.rows[0].freelist_count).toBe(0);
  });
});
