import { Worker } from 'node:worker_threads';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialect, expectProblem, type Replica, startApp, startReplicas, type TestApp } from '../helpers/app.js';

/**
 * Run admission reserves: the count of running runs and the claim of a new one are one atomic step,
 * so a burst of parallel runs cannot all pass a check that none of them has claimed yet.
 */

// Ten cents per token (builtin/echo counts words), so budgets are reached in a few runs.
const PRICES = JSON.stringify({ 'builtin/echo': { input: 100_000, output: 100_000 } });
// Long enough that the admitted runs are still running while the whole burst is admitted or refused.
const SLOW = '/delay 150\none two three four five six';

interface Caller {
  app: FastifyInstance;
}

/** Starts a run over HTTP: execute (JSON) or stream (SSE, read to its end by inject). */
async function startRun(on: Caller, key: string, agentId: string, kind: 'execute' | 'stream', message = SLOW) {
  const res = await on.app.inject({
    method: 'POST',
    url: `/api/v1/agents/${agentId}/${kind}`,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ message }),
  });
  let body: any;
  try {
    body = JSON.parse(res.body);
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body, text: res.body, kind };
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
    expect(r.headers['retry-after']).toBe('1');
  }
  for (const r of ran) {
    if (r.kind === 'execute') expect(r.body.status).toBe('completed');
    else expect(r.text).toContain('event: done');
  }
}

describe('concurrent runs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ MODEL_PRICES: PRICES });
  });
  afterAll(() => t.close());

  it('holds maxConcurrentRuns against a burst, and again for the bursts after it', async () => {
    const { key } = await t.tenant();
    expect((await t.request('PUT', '/api/v1/limits', { key, body: { maxConcurrentRuns: 2 } })).status).toBe(200);
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    for (let round = 0; round < 3; round++) {
      expectAdmitted(await burst([t], key, agent.id), 2);
      // Every admitted run has ended: nothing is left counted.
      expect((await t.request('GET', '/api/v1/limits', { key })).body.usage.runningRuns).toBe(0);
    }
  });

  it('does not count a run whose conversation turned out busy', async () => {
    const { key } = await t.tenant();
    await t.request('PUT', '/api/v1/limits', { key, body: { maxConcurrentRuns: 2 } });
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    const conversation = (await t.request('POST', '/api/v1/conversations', { key, body: { agentId: agent.id } })).body;
    const say = (message: string, conversationId?: string) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/agents/${agent.id}/execute`,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ message, conversationId, onActiveRun: 'reject' }),
      });
    // One run answers in the conversation; then, together, another message to it and a new run.
    const first = say(SLOW, conversation.id);
    for (let i = 0; i < 100 && (await t.request('GET', '/api/v1/limits', { key })).body.usage.runningRuns === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    const [busy, fresh] = await Promise.all([say('me too', conversation.id), say('hello')]);
    // Busy (409) when admitted first and taken back; 429 when the new run was admitted before it.
    expect([409, 429], busy.body).toContain(busy.statusCode);
    expect(fresh.statusCode, fresh.body).toBe(200);
    expect((await first).statusCode).toBe(200);
  });

  it('does not count other tenants’ runs, and runs freely without a limit', async () => {
    const limited = await t.tenant();
    const free = await t.tenant();
    await t.request('PUT', '/api/v1/limits', { key: limited.key, body: { maxConcurrentRuns: 1 } });
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
    await t.request('PUT', '/api/v1/limits', { key, body: { maxConcurrentRuns: 5 } });
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
    expect(res.status, res.text).toBe(200);
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
    const cost = first.body.cost as number;
    expect(cost).toBeGreaterThan(0);
    // Under budget, but the run started first is counted as costing what the first one did.
    expect((await t.request('PUT', '/api/v1/limits', { key, body: { monthlyBudgetUsd: cost * 1.5 } })).status).toBe(200);
    const pair = await Promise.all([startRun(t, key, agent.id, 'execute'), startRun(t, key, agent.id, 'stream')]);
    expect(pair.filter((r) => r.status === 200)).toHaveLength(1);
    expectProblem(pair.find((r) => r.status !== 200)!, 402, 'budget_exceeded');
    expectProblem(await startRun(t, key, agent.id, 'execute'), 402, 'budget_exceeded');
    // With nothing running, a run is admitted while the spend is under the budget, as before.
    expect((await t.request('PUT', '/api/v1/limits', { key, body: { monthlyBudgetUsd: cost * 2.5 } })).status).toBe(200);
    expect((await startRun(t, key, agent.id, 'execute')).status).toBe(200);
  });

  it('does the same for an agent’s own budget', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    const cost = (await startRun(t, key, agent.id, 'execute')).body.cost as number;
    expect((await t.request('PUT', `/api/v1/agents/${agent.id}/budget`, { key, body: { monthlyBudgetUsd: cost * 1.5 } })).status).toBe(200);
    const pair = await Promise.all([startRun(t, key, agent.id, 'stream'), startRun(t, key, agent.id, 'execute')]);
    expect(pair.filter((r) => r.status === 200)).toHaveLength(1);
    expectProblem(pair.find((r) => r.status !== 200)!, 402, 'budget_exceeded');
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
    const [a, b] = instances;
    const { apiKey: key } = await a.services.tenancy.createTenant('two instances');
    const call = (on: Caller, method: 'POST' | 'PUT', url: string, body: unknown) =>
      on.app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
    expect((await call(a, 'PUT', '/api/v1/limits', { maxConcurrentRuns: 2 })).statusCode).toBe(200);
    const agent = JSON.parse((await call(b, 'POST', '/api/v1/agents', { name: 'a', appId: 'x' })).body);
    for (let round = 0; round < 2; round++) expectAdmitted(await burst([a, b], key, agent.id), 2);
  });
});
