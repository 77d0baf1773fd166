import fs from 'node:fs';
import path from 'node:path';
import { Agentry, type RunEvent } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiPath } from '../../packages/console/src/lib/api-path.js';
import { cronPreview } from '../../packages/console/src/lib/cron-preview.js';
import { formatDuration, inWords } from '../../packages/console/src/features/runs/format.js';
import { diffArguments } from '../../packages/console/src/features/runs/json-diff.js';
import { taskActionRefused } from '../../packages/console/src/lib/task-actions.js';
import { applyEvent, followTurn, type KeyValueStore, newTurn, pendingTurns } from '../../packages/console/src/lib/turn.js';
import { nextFire } from '../../src/scheduler/cron.js';
import { startApp, type TestApp } from '../helpers/app.js';

/* The console's browser logic, in plain modules: the cron preview and the chat's stream resume. */

describe('API paths from route parameters', () => {
  it('keep each value one path segment: encoded, never a dot segment', () => {
    expect(apiPath`/api/v1/tasks/${'t-1'}/runs`).toBe('/api/v1/tasks/t-1/runs');
    // A crafted link's parameter cannot reach another path, the query or a fragment.
    expect(apiPath`/api/v1/tasks/${'../api-keys'}/runs`).toBe('/api/v1/tasks/..%2Fapi-keys/runs');
    expect(apiPath`/api/v1/tasks/${'x?limit=1#y'}/runs`).toBe('/api/v1/tasks/x%3Flimit%3D1%23y/runs');
    expect(new URL(apiPath`/api/v1/tasks/${'../../api-keys'}/runs`, 'http://h').pathname).toBe('/api/v1/tasks/..%2F..%2Fapi-keys/runs');
    for (const dots of ['.', '..', '']) expect(() => apiPath`/api/v1/tasks/${dots}/runs`).toThrow(/cannot be an id/);
  });

  it('are built by apiPath wherever the console puts a value in an API path', () => {
    const root = path.join(import.meta.dirname, '../../packages/console/src');
    const sources = fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => /\.tsx?$/.test(f));
    expect(sources.length).toBeGreaterThan(10);
    const raw: string[] = [];
    for (const file of sources) {
      const text = fs.readFileSync(path.join(root, file), 'utf8');
      // A template literal that starts an API path and interpolates, not tagged with apiPath.
      for (const m of text.matchAll(/(\w*)`\/(?:api|v1|a2a)\/[^`]*\$\{/g)) if (m[1] !== 'apiPath') raw.push(`${file}: ${m[0]}`);
    }
    expect(raw).toEqual([]);
  });

  it('the SDK refuses a dot segment for an id', async () => {
    const sdk = new Agentry({ baseUrl: 'http://127.0.0.1:9', apiKey: 'agk_x' });
    await expect(async () => sdk.agents.get('..')).rejects.toThrow(/cannot be an id/);
    await expect(async () => sdk.runs.cancel('.')).rejects.toThrow(/cannot be an id/);
  });
});

describe("a task's actions, as the server rules them (src/tasks)", () => {
  const at = '2030-01-01T09:00:00.000Z';
  it('cancels pending, running, or any task with queued work; a cron time alone is nothing to cancel', () => {
    expect(taskActionRefused('cancel', { status: 'pending', queuedAt: null })).toBeNull();
    expect(taskActionRefused('cancel', { status: 'running', queuedAt: null })).toBeNull();
    expect(taskActionRefused('cancel', { status: 'completed', queuedAt: at })).toBeNull();
    expect(taskActionRefused('cancel', { status: 'cancelled', queuedAt: at })).toBeNull();
    expect(taskActionRefused('cancel', { status: 'failed', queuedAt: at })).toBeNull();
    // A failed cron task always has nextRunAt (its next cron time); the server answers 409 to cancel.
    const failedCron = { status: 'failed', nextRunAt: at, queuedAt: null } as Parameters<typeof taskActionRefused>[1];
    expect(taskActionRefused('cancel', failedCron)).toMatch(/nothing to cancel/);
    expect(taskActionRefused('cancel', { status: 'completed', queuedAt: null })).toMatch(/nothing to cancel/);
  });

  it('runs any task but one awaiting approval or an approval task (task_not_runnable); retries only a failed one', () => {
    expect(taskActionRefused('run', { status: 'completed', approval: null })).toBeNull();
    expect(taskActionRefused('run', { status: 'pending', approval: { action: null } })).toBeNull();
    expect(taskActionRefused('run', { status: 'awaiting_approval' })).toMatch(/approve it first/);
    expect(taskActionRefused('run', { status: 'completed', approval: { action: 'refund' } })).toMatch(/approval task/);
    expect(taskActionRefused('retry', { status: 'failed', approval: { action: 'refund' } })).toBeNull();
    expect(taskActionRefused('retry', { status: 'completed' })).toMatch(/only a failed task/);
  });
});

describe('cron preview', () => {
  it('lists the next five fire times in the time zone, written in it', () => {
    const preview = cronPreview('30 8 * * 1-5', 'Asia/Tokyo', 5, new Date('2026-11-26T00:00:00Z'));
    expect(preview.ok).toBe(true);
    if (!preview.ok) return;
    expect(preview.times.map((t) => t.iso)).toEqual([
      '2026-11-26T23:30:00.000Z',
      '2026-11-29T23:30:00.000Z',
      '2026-11-30T23:30:00.000Z',
      '2026-12-01T23:30:00.000Z',
      '2026-12-02T23:30:00.000Z',
    ]);
    expect(preview.times[0].local).toBe('Fri, 27 Nov 2026, 08:30 GMT+9');
  });

  it('follows a daylight saving change as the server does', () => {
    const from = new Date('2026-10-30T00:00:00Z');
    const preview = cronPreview('0 9 * * *', 'America/New_York', 5, from);
    if (!preview.ok) throw new Error(preview.error);
    expect(preview.times.map((t) => t.iso)).toEqual([
      '2026-10-30T13:00:00.000Z',
      '2026-10-31T13:00:00.000Z',
      '2026-11-01T14:00:00.000Z',
      '2026-11-02T14:00:00.000Z',
      '2026-11-03T14:00:00.000Z',
    ]);
    // The same times the scheduler fires at (src/scheduler/cron.ts).
    let after = from;
    for (const time of preview.times) {
      const next = nextFire('0 9 * * *', 'America/New_York', after)!;
      expect(next.toISOString()).toBe(time.iso);
      after = next;
    }
  });

  it('says why an expression or a time zone is refused', () => {
    expect(cronPreview('', 'UTC')).toEqual({ ok: false, error: expect.stringContaining('enter a cron expression') });
    expect(cronPreview('* * * *', 'UTC')).toEqual({ ok: false, error: expect.stringContaining('five fields') });
    expect(cronPreview('61 * * * *', 'UTC')).toEqual({ ok: false, error: expect.stringContaining('not a valid cron expression') });
    expect(cronPreview('0 9 * * *', 'Mars/Olympus')).toEqual({ ok: false, error: 'unknown time zone Mars/Olympus' });
  });
});

describe('a chat turn folded from run events', () => {
  const token = (seq: number, text: string): RunEvent => ({ type: 'token', seq, data: { text } });

  it('ignores an event it has already applied, so a replay repeats nothing', () => {
    let turn = newTurn('run-1');
    for (const event of [token(1, 'a'), token(2, 'b'), token(2, 'b'), token(1, 'a'), token(3, 'c')]) turn = applyEvent(turn, event, 0);
    expect(turn.text).toBe('abc');
    expect(turn.lastSeq).toBe(3);
  });

  it('measures a tool call live only', () => {
    const start: RunEvent = { type: 'tool_call_start', seq: 1, data: { id: 'c1', name: 'lookup', input: { q: 1 } } };
    const end: RunEvent = { type: 'tool_call_end', seq: 2, data: { id: 'c1', result: { ok: true } } };
    const live = applyEvent(applyEvent(newTurn('r'), start, 1000), end, 1250);
    expect(live.toolCalls).toEqual([{ id: 'c1', name: 'lookup', input: { q: 1 }, result: { ok: true }, startedAt: 1000, durationMs: 250 }]);
    const replayed = applyEvent(applyEvent(newTurn('r'), start, 1000, false), end, 1250, false);
    expect(replayed.toolCalls[0].durationMs).toBeUndefined();
  });

  it('holds a tool call waiting for approval until it starts, once on a replay', () => {
    const waiting = {
      type: 'approval_required',
      seq: 1,
      data: { approvalId: 'ap1', reason: 'loud', toolCall: { id: 'c1', name: 'shout', arguments: { text: 'hi' } } },
    } as unknown as RunEvent;
    let turn = applyEvent(applyEvent(newTurn('r'), waiting, 0), waiting, 0);
    expect(turn.approvals).toEqual([{ approvalId: 'ap1', toolCallId: 'c1', name: 'shout', arguments: { text: 'hi' }, reason: 'loud' }]);
    turn = applyEvent(turn, { type: 'tool_call_start', seq: 2, data: { id: 'c1', name: 'shout', input: { text: 'hi' } } }, 0);
    expect(turn.approvals).toEqual([]);
    expect(turn.toolCalls.map((c) => c.id)).toEqual(['c1']);
  });

  it('keeps the pending turn per tab and forgets only its own run', () => {
    const map = new Map<string, string>();
    const storage: KeyValueStore = {
      getItem: (k) => map.get(k) ?? null,
      setItem: (k, v) => void map.set(k, v),
      removeItem: (k) => void map.delete(k),
    };
    pendingTurns.set(storage, { runId: 'r2', conversationId: 'c', agentId: 'a' });
    pendingTurns.clear(storage, 'r1');
    expect(pendingTurns.get(storage)?.runId).toBe('r2');
    pendingTurns.clear(storage, 'r2');
    expect(pendingTurns.get(storage)).toBeNull();
    map.set('agentry.pendingTurn', '{not json');
    expect(pendingTurns.get(storage)).toBeNull();
  });
});

describe('resuming a streamed answer (a real server, the SDK)', () => {
  let t: TestApp;
  let client: Agentry;
  let agentId: string;
  const words = Array.from({ length: 10 }, (_, i) => `word${i}`).join(' ');

  beforeAll(async () => {
    t = await startApp();
    const { key } = await t.tenant();
    agentId = (await t.agent(key)).id;
    client = new Agentry({ baseUrl: await t.listen(), apiKey: key });
  });
  afterAll(() => t?.close());

  /** Starts a slow answer and reads it until `tokens` tokens arrived, then drops the stream (a reload). */
  async function partialAnswer(tokens: number) {
    const controller = new AbortController();
    const stream = client.agents.stream(agentId, { message: `/delay 30\n${words}` }, { signal: controller.signal });
    const runId = await stream.runId();
    let seen = newTurn(runId);
    await followTurn(stream, seen, (turn) => {
      seen = turn;
      if (turn.text.split(' ').filter(Boolean).length >= tokens) controller.abort();
    }).catch((err) => {
      if (!controller.signal.aborted) throw err;
    });
    return seen;
  }

  it('rebuilt from the first event after a reload: the whole text, once', async () => {
    const before = await partialAnswer(3);
    expect(before.status).toBe('streaming');
    expect(before.text.length).toBeGreaterThan(0);
    expect(before.text.length).toBeLessThan(words.length);
    const after = await followTurn(client.runs.events(before.runId, { lastEventId: 0 }), newTurn(before.runId), () => {}, { live: false });
    expect(after.status).toBe('done');
    expect(after.text).toBe(words);
  });

  it('continued from the last event seen after a dropped connection: the rest, nothing twice', async () => {
    const before = await partialAnswer(4);
    const after = await followTurn(client.runs.events(before.runId, { lastEventId: before.lastSeq }), before, () => {});
    expect(after.status).toBe('done');
    expect(after.text).toBe(words);
    expect(after.tokenUsage?.outputTokens).toBe(10);
  });
});

describe('a run trace’s figures and an approver’s edit', () => {
  it('says durations in ms, s and min, and expiries in the unit they round to', () => {
    expect([840, 2345, 12_340, 65_000, 120_000, null].map(formatDuration)).toEqual([
      '840 ms',
      '2.35 s',
      '12.3 s',
      '1 min 5 s',
      '2 min',
      '—',
    ]);
    const now = Date.parse('2026-01-01T12:00:00Z');
    const at = (s: number) => new Date(now + s * 1000).toISOString();
    // A second short of the hour is an hour, never "60 minutes"; likewise a day.
    expect(inWords(at(3599), now)).toMatch(/in 1 hour/);
    expect(inWords(at(86_399), now)).toMatch(/tomorrow|in 1 day/);
    expect(inWords(at(150), now)).toMatch(/in 3 minutes/);
    expect(inWords(at(-7200), now)).toMatch(/2 hours ago/);
  });

  it('lists what an approver changed, removed and added, nested and in arrays', () => {
    const model = { to: 'all@example.com', body: { text: 'hi', cc: ['a', 'b'] }, urgent: true };
    const approved = { to: 'team@example.com', body: { text: 'hi', cc: ['a'] }, note: 'checked' };
    expect(diffArguments(model, approved)).toEqual([
      { path: 'to', kind: 'changed', before: 'all@example.com', after: 'team@example.com' },
      { path: 'body.cc[1]', kind: 'removed', before: 'b' },
      { path: 'urgent', kind: 'removed', before: true },
      { path: 'note', kind: 'added', after: 'checked' },
    ]);
    expect(diffArguments({ a: 1 }, { a: 1 })).toEqual([]);
  });
});
