import { Worker } from 'node:worker_threads';
import createClient, { type Client } from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { components, paths } from '../../packages/client/src/generated/openapi.js';
import { dialect, expectProblem, type Replica, startApp, startReplicas, type TestApp } from '../helpers/app.js';
import { execute, type RunAnswer } from '../helpers/execute.js';

/**
 * Run admission reserves: the count of running runs and the claim of a new one are one atomic step,
 * so a burst of parallel runs cannot all pass a check that none of them has claimed yet.
 */

// Ten cents per token (builtin/echo counts words), so budgets are reached in a few runs.
const PRICES = JSON.stringify({ 'builtin/echo': { input: 100_000, output: 100_000 } });
// A window of 1,000 tokens bounds each step to 900 prompt and 100 answer tokens, at $10 per million each:
// an agent with maxSteps 1 reserves $0.01 per run (runs/reservation.ts), and a run costs about $0.00014.
const WINDOWED = JSON.stringify({ 'builtin/echo': { input: 10, output: 10, contextWindow: 1000, outputReserve: 100 } });
const RESERVED_USD = 0.01;
// Long enough that the admitted runs are still running while the whole burst is admitted or refused.
const SLOW = '/delay 150\none two three four five six';

/** Where runs are started: the test app, or a replica listening on a port. */
interface Caller {
  api(key?: string | null): Client<paths>;
}

/** A replica called over HTTP by the typed client (`startReplicas` gives apps with no client of their own). */
async function callerOf(replica: Replica): Promise<Caller> {
  const baseUrl = await replica.app.listen({ port: 0, host: '127.0.0.1' });
  return { api: (key) => createClient<paths>({ baseUrl, headers: key ? { authorization: `Bearer ${key}` } : {} }) };
}

/** A run asked for: execute's answer as `run`, or the stream's events read to their end; a refusal as `error`. */
interface StartedRun {
  kind: 'execute' | 'stream';
  status: number;
  response: Response;
  error?: components['schemas']['Problem'];
  run?: RunAnswer;
  events?: string;
}

/** Starts a run: execute (JSON) or stream (SSE). */
async function startRun(on: Caller, key: string, agentId: string, kind: 'execute' | 'stream', message = SLOW): Promise<StartedRun> {
  if (kind === 'execute') {
    const { response, error, run } = await execute(on.api(key), agentId, { message });
    return { kind, status: response.status, response, error, run };
  }
  const { response, error, data } = await on.api(key).POST('/api/v1/agents/{id}/stream', {
    params: { path: { id: agentId } },
    body: { message },
    parseAs: 'text',
  });
  return { kind, status: response.status, response, error, events: data };
}

/** Twelve runs at once, half executes and half streams, over the given instances in turn. */
async function burst(instances: Caller[], key: string, agentId: string, size = 12) {
  return Promise.all(
    Array.from({ length: size }, (_, i) => startRun(instances[i % instances.length], key, agentId, i % 2 ? 'stream' : 'execute')),
  );
}

function expectAdmitted(results: Awaited<ReturnType<typeof burst>>, admitted: number) {
  const ran = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status !== 200);
  expect(ran.length, results.map((r) => `${r.kind} ${r.status}`).join(', ')).toBe(admitted);
  for (const r of refused) {
    expectProblem(r, 429, 'concurrency_limit');
    expect(r.response.headers.get('retry-after')).toBe('1');
  }
  for (const r of ran) {
    if (r.kind === 'execute') expect(r.run!.status).toBe('completed');
    else expect(r.events).toContain('event: done');
  }
}

/** What an admitted run cost: execute's body, or the stream's `done` event. */
function costOf(r: StartedRun): number {
  if (r.kind === 'execute') return r.run!.cost;
  const done = /event: done\ndata: (.*)\n/.exec(r.events!);
  return JSON.parse(done![1]).cost;
}

/** The tenant's usage this month (running runs, spend and reservations). */
async function usage(on: Caller, key: string) {
  const { data, error, response } = await on.api(key).GET('/api/v1/limits');
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!.usage;
}

/** Checks the burst admitted `admitted` runs, each of which completed, and refused the rest with 402; answers their cost. */
function expectWithinBudget(results: Awaited<ReturnType<typeof burst>>, admitted: number): number {
  const ran = results.filter((r) => r.status === 200);
  expect(ran.length, results.map((r) => `${r.kind} ${r.status}`).join(', ')).toBe(admitted);
  for (const r of results.filter((r) => r.status !== 200)) expectProblem(r, 402, 'budget_exceeded');
  for (const r of ran) {
    if (r.kind === 'execute') expect(r.run!.status).toBe('completed');
    else expect(r.events).toContain('event: done');
  }
  return ran.reduce((sum, r) => sum + costOf(r), 0);
}

describe('concurrent runs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ MODEL_PRICES: PRICES });
  });
  afterAll(() => t.close());

  it('holds maxConcurrentRuns against a burst, and again for the bursts after it', async () => {
    const { key } = await t.tenant();
    expect((await t.api(key).PUT('/api/v1/limits', { body: { maxConcurrentRuns: 2 } })).response.status).toBe(200);
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    for (let round = 0; round < 3; round++) {
      expectAdmitted(await burst([t], key, agent.id), 2);
      // Every admitted run has ended: nothing is left counted.
      expect((await usage(t, key)).runningRuns).toBe(0);
    }
  });

  it('does not count a run whose conversation turned out busy', async () => {
    const { key } = await t.tenant();
    await t.api(key).PUT('/api/v1/limits', { body: { maxConcurrentRuns: 2 } });
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    const conversation = (await t.api(key).POST('/api/v1/conversations', { body: { agentId: agent.id } })).data!;
    const say = (message: string, conversationId?: string) =>
      execute(t.api(key), agent.id, { message, conversationId, onActiveRun: 'reject' });
    // One run answers in the conversation; then, together, another message to it and a new run.
    const first = say(SLOW, conversation.id);
    await vi.waitFor(async () => expect((await usage(t, key)).runningRuns).not.toBe(0), { timeout: 5000, interval: 10 });
    const [busy, fresh] = await Promise.all([say('me too', conversation.id), say('hello')]);
    // Busy (409) when admitted first and taken back; 429 when the new run was admitted before it.
    expect([409, 429], JSON.stringify(busy.error)).toContain(busy.response.status);
    expect(fresh.response.status, JSON.stringify(fresh.error)).toBe(200);
    expect((await first).response.status).toBe(200);
  });

  it('does not count other tenants’ runs, and runs freely without a limit', async () => {
    const limited = await t.tenant();
    const free = await t.tenant();
    await t.api(limited.key).PUT('/api/v1/limits', { body: { maxConcurrentRuns: 1 } });
    const a = await t.agent(limited.key, { name: 'a', appId: 'x' });
    const b = await t.agent(free.key, { name: 'b', appId: 'x' });
    const [one, all] = await Promise.all([burst([t], limited.key, a.id, 6), burst([t], free.key, b.id, 6)]);
    expectAdmitted(one, 1);
    expectAdmitted(all, 6);
  });
});

describe.skipIf(dialect !== 'sqlite')('admission on SQLite', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('waits for another connection’s write lock instead of failing (503) when that connection commits', async () => {
    const { key } = await t.tenant();
    await t.api(key).PUT('/api/v1/limits', { body: { maxConcurrentRuns: 5 } });
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    // Another connection (the CLI, a checkpoint) holds the write lock, then commits a change.
    const worker = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const db = new (require('better-sqlite3'))(workerData.file);
       db.exec('begin immediate');
       db.prepare('update tenants set name = name').run();
       parentPort.postMessage('locked');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
       db.exec('commit');
       db.close();`,
      { eval: true, workerData: { file: t.db.location } },
    );
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    await new Promise((resolve) => worker.once('message', resolve));
    const res = await startRun(t, key, agent.id, 'execute', 'hello');
    expect(res.status, JSON.stringify(res.error)).toBe(200);
    await exited;
  });
});

describe('budgets', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ MODEL_PRICES: PRICES });
  });
  afterAll(() => t.close());

  it('admits one of two runs started together near the end of the tenant’s budget', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    const first = await startRun(t, key, agent.id, 'execute');
    const cost = first.run!.cost;
    expect(cost).toBeGreaterThan(0);
    // Under budget, but the run started first is counted as costing what the first one did.
    expect((await t.api(key).PUT('/api/v1/limits', { body: { monthlyBudgetUsd: cost * 1.5 } })).response.status).toBe(200);
    const pair = await Promise.all([startRun(t, key, agent.id, 'execute'), startRun(t, key, agent.id, 'stream')]);
    expect(pair.filter((r) => r.status === 200)).toHaveLength(1);
    expectProblem(pair.find((r) => r.status !== 200)!, 402, 'budget_exceeded');
    expectProblem(await startRun(t, key, agent.id, 'execute'), 402, 'budget_exceeded');
    // With nothing running, a run is admitted while the spend is under the budget, as before.
    expect((await t.api(key).PUT('/api/v1/limits', { body: { monthlyBudgetUsd: cost * 2.5 } })).response.status).toBe(200);
    expect((await startRun(t, key, agent.id, 'execute')).status).toBe(200);
  });

  it('reserves a windowless model’s estimate: one of a burst of 30 under $0.05, the overshoot that one run', async () => {
    const { key } = await t.tenant();
    await t.api(key).PUT('/api/v1/limits', { body: { monthlyBudgetUsd: 0.05 } });
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    const results = await burst([t], key, agent.id, 30);
    // Each run reserves ten steps of ~8,200 prompt and 4,096 answer tokens at $0.10 a token: the first fills the budget.
    const cost = expectWithinBudget(results, 1);
    expect(results.find((r) => r.status === 402)!.error!.detail).toContain('reserve');
    const after = await usage(t, key);
    expect(after).toMatchObject({ runningRuns: 0, reservedUsd: 0 });
    // The one run admitted costs $1.40: past the budget by that run alone, as a run that starts under it finishes.
    expect(after.spentUsd).toBeCloseTo(cost, 9);
  });

  it('does the same for an agent’s own budget', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    const cost = (await startRun(t, key, agent.id, 'execute')).run!.cost;
    const set = await t
      .api(key)
      .PUT('/api/v1/agents/{id}/budget', { params: { path: { id: agent.id } }, body: { monthlyBudgetUsd: cost * 1.5 } });
    expect(set.response.status).toBe(200);
    const pair = await Promise.all([startRun(t, key, agent.id, 'stream'), startRun(t, key, agent.id, 'execute')]);
    expect(pair.filter((r) => r.status === 200)).toHaveLength(1);
    expectProblem(pair.find((r) => r.status !== 200)!, 402, 'budget_exceeded');
  });
});

describe('budgets under a burst', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ MODEL_PRICES: WINDOWED });
  });
  afterAll(() => t.close());

  it('admits 5 of 30 parallel runs under a $0.05 budget at $0.01 reserved each, burst after burst', async () => {
    const { key } = await t.tenant();
    expect((await t.api(key).PUT('/api/v1/limits', { body: { monthlyBudgetUsd: 0.05 } })).response.status).toBe(200);
    const agent = await t.agent(key, { name: 'a', appId: 'x', configuration: { maxSteps: 1 } });
    let spent = 0;
    for (let round = 0; round < 2; round++) {
      // $0.00014 spent per run: 0.0014 + 4 x $0.01 reserved still admits a fifth, never a sixth.
      spent += expectWithinBudget(await burst([t], key, agent.id, 30), 5);
      const after = await usage(t, key);
      // Every reservation was settled to its run's cost: nothing is held once the runs have ended.
      expect(after).toMatchObject({ runningRuns: 0, reservedUsd: 0 });
      expect(after.spentUsd).toBeCloseTo(spent, 9);
      expect(after.spentUsd).toBeLessThan(0.05 + RESERVED_USD);
    }
  });

  it('holds an agent’s own budget the same way', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { name: 'a', appId: 'x', configuration: { maxSteps: 1 } });
    const other = await t.agent(key, { name: 'b', appId: 'x', configuration: { maxSteps: 1 } });
    const set = await t
      .api(key)
      .PUT('/api/v1/agents/{id}/budget', { params: { path: { id: agent.id } }, body: { monthlyBudgetUsd: 0.03 } });
    expect(set.data).toMatchObject({ monthlyBudgetUsd: 0.03, spentUsd: 0, reservedUsd: 0 });
    const [limited, free] = await Promise.all([burst([t], key, agent.id, 12), burst([t], key, other.id, 12)]);
    expectWithinBudget(limited, 3);
    // The other agent has no budget of its own, and the tenant none.
    expectWithinBudget(free, 12);
  });

  it('shows what running runs reserve, and releases it when they fail or are cancelled', async () => {
    const { key } = await t.tenant();
    const api = t.api(key);
    await api.PUT('/api/v1/limits', { body: { monthlyBudgetUsd: 1 } });
    const agent = await t.agent(key, { name: 'a', appId: 'x', configuration: { maxSteps: 1 } });
    const slow = [
      startRun(t, key, agent.id, 'execute', '/delay 300\none two three'),
      startRun(t, key, agent.id, 'stream', '/delay 2000\none two'),
    ];
    // The first sample that counts both runs is the one checked (the first run ends 300 ms in).
    const now = await vi.waitFor(
      async () => {
        const sample = await usage(t, key);
        expect(sample.runningRuns).toBeGreaterThanOrEqual(2);
        return sample;
      },
      { timeout: 2000, interval: 10 },
    );
    expect(now).toMatchObject({ runningRuns: 2, spentUsd: 0, reservedUsd: 2 * RESERVED_USD });
    const budget = (await api.GET('/api/v1/agents/{id}/budget', { params: { path: { id: agent.id } } })).data;
    expect(budget).toMatchObject({ spentUsd: 0, reservedUsd: 2 * RESERVED_USD });
    // The streamed one is cancelled; its reservation goes with it.
    const runs = (await api.GET('/api/v1/agents/{id}/runs', { params: { path: { id: agent.id } } })).data!.runs;
    const streamed = runs.find((r) => r.kind === 'stream')!;
    expect((await api.POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId: streamed.id } } })).response.status).toBe(200);
    const [executed] = await Promise.all(slow);
    expect(executed.run!.status).toBe('completed');
    // A run that fails holds nothing either once it has ended.
    // (a failed model call: 502, the run failed)
    expect((await startRun(t, key, agent.id, 'execute', '/fail on purpose')).status).toBe(502);
    const after = await usage(t, key);
    expect(after).toMatchObject({ runningRuns: 0, reservedUsd: 0 });
    expect(after.spentUsd).toBeCloseTo(executed.run!.cost, 9);
    // The run records what was reserved when it was admitted: the other slow run's $0.01, or nothing.
    const recorded = (await api.GET('/api/v1/runs/{runId}', { params: { path: { runId: executed.run!.runId } } })).data!.budget.tenant!;
    expect([0, RESERVED_USD]).toContain(recorded.reservedUsd);
  });
});

describe('budgets and a model without a price', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('reserves nothing for a run that costs nothing: a burst runs while the budget is unspent', async () => {
    const { key } = await t.tenant();
    await t.api(key).PUT('/api/v1/limits', { body: { monthlyBudgetUsd: 0.05 } });
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    expectWithinBudget(await burst([t], key, agent.id, 12), 12);
    expect(await usage(t, key)).toMatchObject({ spentUsd: 0, reservedUsd: 0 });
  });
});

describe.skipIf(dialect !== 'postgres')('budgets across two instances on one PostgreSQL database', () => {
  let started: Awaited<ReturnType<typeof startReplicas>> | undefined;

  beforeAll(async () => {
    started = await startReplicas(2, { MODEL_PRICES: WINDOWED });
  });
  afterAll(async () => {
    await started?.close();
  });

  it('admits 5 of 30 parallel runs spread over both under a $0.05 budget at $0.01 reserved each', async () => {
    const [a, b] = await Promise.all(started!.replicas.map(callerOf));
    const { apiKey: key } = await started!.replicas[0].services.tenancy.createTenant('two instances, one budget');
    expect((await a.api(key).PUT('/api/v1/limits', { body: { monthlyBudgetUsd: 0.05 } })).response.status).toBe(200);
    const agent = (await b.api(key).POST('/api/v1/agents', { body: { name: 'a', appId: 'x', configuration: { maxSteps: 1 } } })).data!;
    let spent = 0;
    for (let round = 0; round < 2; round++) {
      spent += expectWithinBudget(await burst([a, b], key, agent.id, 30), 5);
      const after = await usage(b, key);
      expect(after).toMatchObject({ runningRuns: 0, reservedUsd: 0 });
      expect(after.spentUsd).toBeCloseTo(spent, 9);
    }
  });
});

describe.skipIf(dialect !== 'postgres')('concurrent runs across two instances on one PostgreSQL database', () => {
  let started: Awaited<ReturnType<typeof startReplicas>> | undefined;
  const instances: Replica[] = [];

  beforeAll(async () => {
    started = await startReplicas(2, { MODEL_PRICES: PRICES });
    instances.push(...started.replicas);
  });
  afterAll(async () => {
    await started?.close();
  });

  it('admits exactly maxConcurrentRuns of a burst spread over both, burst after burst', async () => {
    const [a, b] = await Promise.all(instances.map(callerOf));
    const { apiKey: key } = await instances[0].services.tenancy.createTenant('two instances');
    expect((await a.api(key).PUT('/api/v1/limits', { body: { maxConcurrentRuns: 2 } })).response.status).toBe(200);
    const agent = (await b.api(key).POST('/api/v1/agents', { body: { name: 'a', appId: 'x' } })).data!;
    for (let round = 0; round < 2; round++) expectAdmitted(await burst([a, b], key, agent.id), 2);
  });
});
