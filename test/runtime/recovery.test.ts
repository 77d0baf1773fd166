import { Agentry, AgentryError, type RunEvent } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/app.js';
import { cli, startServer, type ServerProcess } from '../helpers/process.js';

let database: TestDatabase;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  for (const s of servers) await s.stop('SIGKILL');
  await database.drop();
});

/** The SDK on `server`, without retries: each answer is the one the server gave. */
const clientOf = (server: ServerProcess, apiKey: string) => new Agentry({ baseUrl: server.url, apiKey, maxRetries: 0 });

/** Streams a slow answer from `client` and stops reading (the connection dropped) after `count` events. */
async function firstEvents(client: Agentry, agentId: string, count: number) {
  const controller = new AbortController();
  const message = '/delay 400\none two three four five six seven eight nine ten eleven twelve';
  const seen: RunEvent[] = [];
  for await (const event of client.agents.stream(agentId, { message }, { signal: controller.signal })) {
    seen.push(event);
    if (seen.length === count) break;
  }
  controller.abort();
  return seen;
}

/** The run, once it is no longer running: its lease (2 s) must expire first. */
const ended = (client: Agentry, runId: string) =>
  vi.waitFor(
    async () => {
      const run = await client.runs.get(runId);
      if (run.status === 'running') throw new Error(`run ${runId} is still running`);
      return run;
    },
    { timeout: 15_000, interval: 100 },
  );

describe('a run whose process dies', () => {
  it('is declared failed (interrupted) by another process once its lease expires', async () => {
    const env = { ...database.env, RUN_LEASE_SECONDS: '2', LOG_LEVEL: 'warn' };
    const a = await startServer(env);
    servers.push(a);
    const { apiKey } = JSON.parse((await cli(['tenants', 'create', 'crash', '--json'], env)).stdout);
    const onA = clientOf(a, apiKey);
    const agent = await onA.agents.create({ name: 'victim', appId: 'x' });

    const seen = await firstEvents(onA, agent.id, 2);
    expect(seen.map((e) => (e.type === 'token' ? e.data.text : e.type))).toEqual(['one ', 'two ']);
    const runs = await onA.agents.runs(agent.id).toArray();
    const { id: runId, conversationId } = runs[0];
    expect(runs[0].status).toBe('running');

    await a.stop('SIGKILL');
    const b = await startServer(env);
    servers.push(b);
    const onB = clientOf(b, apiKey);

    const run = await ended(onB, runId);
    expect(run).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    // The part the client had already received is kept as the run's output.
    expect(run.output.startsWith('one two ')).toBe(true);

    // The stream can be resumed on the other process: it replays what was stored, then the end.
    const rest: RunEvent[] = [];
    for await (const event of onB.runs.events(runId, { lastEventId: 1, maxReconnects: 0 })) rest.push(event);
    expect(rest[0]).toMatchObject({ seq: 2, type: 'token', data: { text: 'two ' } });
    expect(rest.at(-1)).toMatchObject({ type: 'error', data: { code: 'interrupted' } });

    // The conversation is free again.
    const next = await onB.conversations.send(conversationId!, { content: 'are you back?' });
    expect(next).toMatchObject({ message: { content: 'are you back?' } });
  });

  it('holds its budget reservation until another process declares it interrupted, then releases it', async () => {
    // One step of at most 900 prompt and 100 answer tokens at $10 per million: $0.01 reserved per run,
    // which a $0.01 budget admits one at a time.
    const prices = { 'builtin/echo': { input: 10, output: 10, contextWindow: 1000, outputReserve: 100 } };
    const env = { ...database.env, RUN_LEASE_SECONDS: '2', LOG_LEVEL: 'warn', MODEL_PRICES: JSON.stringify(prices) };
    const a = await startServer(env);
    servers.push(a);
    const { apiKey } = JSON.parse((await cli(['tenants', 'create', 'reserved', '--json'], env)).stdout);
    const onA = clientOf(a, apiKey);
    await onA.tenant.setLimits({ monthlyBudgetUsd: 0.01 });
    const agent = await onA.agents.create({ name: 'victim', appId: 'x', configuration: { maxSteps: 1 } });

    await firstEvents(onA, agent.id, 1);
    // The running run holds the budget: another is refused.
    const refused = await onA.agents.execute(agent.id, { message: 'hello' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(AgentryError);
    expect(refused).toMatchObject({ status: 402, code: 'budget_exceeded' });
    const runId = (await onA.agents.runs(agent.id).toArray())[0].id;

    await a.stop('SIGKILL');
    const b = await startServer(env);
    servers.push(b);
    const onB = clientOf(b, apiKey);
    const run = await ended(onB, runId);
    expect(run).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    // Its end settled the reservation: nothing is held, and the next run is admitted.
    const { usage } = await onB.tenant.limits();
    expect(usage).toMatchObject({ reservedUsd: 0, runningRuns: 0 });
    const next = await onB.agents.execute(agent.id, { message: 'hello' });
    expect(next.status).toBe('completed');
  }, 120_000);
});
