import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialect, expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { type ExecuteBody, execute as executeOn } from '../helpers/execute.js';
import { readSse } from '../helpers/sse.js';

/**
 * A run whose end cannot be recorded (issue 33, item 15) used to answer 200 `"status":"running"`: the
 * end's write failed, and the execute read the row back. The database refuses the end here for real,
 * with a trigger on the runs table (SQLite and PostgreSQL alike), for one agent's runs at a time:
 * - refusing a completed end: the run is recorded as failed (`result_unrecorded`) instead, and said so;
 * - refusing every end: the execute answers 503 `run_end_unrecorded`, the stream ends with that error,
 *   and the run no longer executes here (recovery ends it once its lease expires).
 * And the run-event writer's second line: an event that cannot be serialised at all fails its run,
 * not the process (no unhandled rejection: vitest would report one).
 */

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant());
  await t.listen();
  if (dialect === 'postgres') {
    await sql`CREATE FUNCTION refuse_run_end() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the test refuses this end'; END $$`.execute(
      t.db.kysely,
    );
  }
});
afterAll(() => t?.close());

/** Makes the database refuse every write of one of `statuses` to the agent's runs. */
async function refuseEnds(agentId: string, statuses: string[]) {
  const name = sql.raw(`refuse_end_${agentId.replaceAll('-', '_')}`);
  const when = sql.raw(`NEW.agent_id = '${agentId}' AND NEW.status IN (${statuses.map((s) => `'${s}'`).join(', ')})`);
  if (dialect === 'postgres') {
    await sql`CREATE TRIGGER ${name} BEFORE UPDATE ON runs FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION refuse_run_end()`.execute(
      t.db.kysely,
    );
  } else {
    await sql`CREATE TRIGGER ${name} BEFORE UPDATE ON runs FOR EACH ROW WHEN ${when} BEGIN SELECT RAISE(ABORT, 'the test refuses this end'); END`.execute(
      t.db.kysely,
    );
  }
}

const execute = (agentId: string, body: ExecuteBody) => executeOn(t.api(key), agentId, body);
const stream = async (agentId: string, message: string) => {
  const res = await t.fetch(`/api/v1/agents/${agentId}/stream`, key, { body: { message } });
  expect(res.status).toBe(200);
  return readSse(res);
};
const runsOf = async (agentId: string) =>
  (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } })).data!.runs;
const runOf = async (id: string) => (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: id } } })).data!;
const runId = (detail: string) => /run ([0-9a-f-]{36})/.exec(detail)![1];

describe('a run whose end the database refuses', () => {
  it('as it was: the run is recorded failed with result_unrecorded, and the caller is told so, never "running"', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    await refuseEnds(agent.id, ['completed']);

    const res = await execute(agent.id, { message: 'hello there' });
    expectProblem(res, 502, 'result_unrecorded');
    const run = await runOf(runId(res.error!.detail));
    expect(run.status).toBe('failed');
    expect(run.error!.code).toBe('result_unrecorded');
    // Its text is kept; its conversation is free for the next turn.
    expect(run.output).toBe('hello there');
    const next = await execute(agent.id, { message: 'again', conversationId: run.conversationId! });
    expectProblem(next, 502, 'result_unrecorded');

    const events = await stream(agent.id, 'streamed');
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'result_unrecorded' } });
    // The stored events replay the same end.
    const streamedRun = (await runsOf(agent.id))[0];
    const replay = await readSse(await t.fetch(`/api/v1/runs/${streamedRun.id}/events`, key));
    expect(replay.at(-1)).toMatchObject({ event: 'error', data: { code: 'result_unrecorded' } });
    expect(t.services.runs.activeCount).toBe(0);
  });

  it('whatever it is: execute answers 503 run_end_unrecorded, the stream ends with that error, the run stops executing here', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    await refuseEnds(agent.id, ['completed', 'failed', 'cancelled']);

    const res = await execute(agent.id, { message: 'hello there' });
    expectProblem(res, 503, 'run_end_unrecorded');
    expect(Number(res.response.headers.get('retry-after'))).toBeGreaterThan(0);
    // The row says what the database holds: the run has not ended, and recovery will end it.
    const run = await runOf(runId(res.error!.detail));
    expect(run.status).toBe('running');

    const events = await stream(agent.id, 'streamed');
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'run_end_unrecorded' } });
    expect(events.some((e) => e.event === 'done')).toBe(false);
    expect(t.services.runs.activeCount).toBe(0);
    expect((await t.api().GET('/healthz')).response.status).toBe(200);
  });
});

describe('an event that cannot be serialised (the event writer’s second line)', () => {
  it('fails its run with events_unrecorded; other runs and the process go on', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const res = await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, {
      body: { message: '/delay 500\none two three four five six seven eight nine ten' },
    });
    expect(res.status).toBe(200);
    let injected = false;
    const events = await readSse(res, {
      stopAfter: (seen) => {
        // Once the run has streamed its first token, something emits a value no bound stopped.
        if (!injected && seen.some((e) => e.event === 'token')) {
          injected = true;
          let deep: unknown = 'bottom';
          for (let i = 0; i < 100_000; i++) deep = [deep];
          t.services.runs.events.get(String(res.headers.get('x-run-id')))!.emit('tool_call_start', { id: 'x', name: 'x', input: deep });
        }
        return false;
      },
    });
    expect(injected).toBe(true);
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'events_unrecorded' } });
    const run = await runOf(String(res.headers.get('x-run-id')));
    expect(run.status).toBe('failed');
    expect(run.error!.code).toBe('events_unrecorded');
    // Another run is untouched.
    const other = await execute(agent.id, { message: 'still here' });
    expect(other.response.status, JSON.stringify(other.error)).toBe(200);
    expect(other.run!.output).toBe('still here');
  });
});
