import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/app.js';
import { cli, startServer, type ServerProcess } from '../helpers/process.js';
import { readSse } from '../helpers/sse.js';

let database: TestDatabase;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  for (const s of servers) await s.stop('SIGKILL');
  await database.drop();
});

describe('a run whose process dies', () => {
  it('is declared failed (interrupted) by another process once its lease expires', async () => {
    const env = { ...database.env, RUN_LEASE_SECONDS: '2', LOG_LEVEL: 'warn' };
    const a = await startServer(env);
    servers.push(a);
    const { apiKey } = JSON.parse((await cli(['tenants', 'create', 'crash', '--json'], env)).stdout);
    const call = (s: ServerProcess, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(`${s.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const agent = (await (await call(a, '/api/v1/agents', { name: 'victim', appId: 'x' })).json()) as { id: string };

    const controller = new AbortController();
    const res = await fetch(`${a.url}/api/v1/agents/${agent.id}/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: '/delay 400\none two three four five six seven eight nine ten eleven twelve' }),
      signal: controller.signal,
    });
    const seen = await readSse(res, { stopAfter: (ev) => ev.length === 2, controller });
    expect(seen.map((e) => e.data.text)).toEqual(['one ', 'two ']);
    const runs = (await (await call(a, `/api/v1/agents/${agent.id}/runs`)).json()) as {
      runs: { id: string; conversationId: string; status: string }[];
    };
    const { id: runId, conversationId } = runs.runs[0];
    expect(runs.runs[0].status).toBe('running');

    await a.stop('SIGKILL');
    const b = await startServer(env);
    servers.push(b);

    let run: { status: string; error: { code: string } | null; output: string } | undefined;
    for (let i = 0; i < 100; i++) {
      run = (await (await call(b, `/api/v1/runs/${runId}`)).json()) as typeof run;
      if (run!.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(run).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    // The part the client had already received is kept as the run's output.
    expect(run!.output.startsWith('one two ')).toBe(true);

    // The stream can be resumed on the other process: it replays what was stored, then the end.
    const evRes = await call(b, `/api/v1/runs/${runId}/events`, undefined, { 'last-event-id': '1' });
    const rest = await readSse(evRes);
    expect(rest[0]).toMatchObject({ id: '2', event: 'token', data: { text: 'two ' } });
    expect(rest.at(-1)).toMatchObject({ event: 'error', data: { code: 'interrupted' } });

    // The conversation is free again.
    const next = await call(b, `/api/v1/conversations/${conversationId}/messages`, { content: 'are you back?' });
    expect(next.status).toBe(200);
    expect(((await next.json()) as { message: { content: string } }).message.content).toBe('are you back?');
  });

  it('holds its budget reservation until another process declares it interrupted, then releases it', async () => {
    // One step of at most 900 prompt and 100 answer tokens at $10 per million: $0.01 reserved per run,
    // which a $0.01 budget admits one at a time.
    const prices = { 'builtin/echo': { input: 10, output: 10, contextWindow: 1000, outputReserve: 100 } };
    const env = { ...database.env, RUN_LEASE_SECONDS: '2', LOG_LEVEL: 'warn', MODEL_PRICES: JSON.stringify(prices) };
    const a = await startServer(env);
    servers.push(a);
    const { apiKey } = JSON.parse((await cli(['tenants', 'create', 'reserved', '--json'], env)).stdout);
    const call = (s: ServerProcess, method: string, path: string, body?: unknown) =>
      fetch(`${s.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    expect((await call(a, 'PUT', '/api/v1/limits', { monthlyBudgetUsd: 0.01 })).status).toBe(200);
    const agent = (await (
      await call(a, 'POST', '/api/v1/agents', { name: 'victim', appId: 'x', configuration: { maxSteps: 1 } })
    ).json()) as {
      id: string;
    };

    const controller = new AbortController();
    const res = await fetch(`${a.url}/api/v1/agents/${agent.id}/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: '/delay 400\none two three four five six seven eight nine ten eleven twelve' }),
      signal: controller.signal,
    });
    await readSse(res, { stopAfter: (ev) => ev.length === 1, controller });
    // The running run holds the budget: another is refused.
    const refused = await call(a, 'POST', `/api/v1/agents/${agent.id}/execute`, { message: 'hello' });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { code: string }).code).toBe('budget_exceeded');
    const runId = ((await (await call(a, 'GET', `/api/v1/agents/${agent.id}/runs`)).json()) as { runs: { id: string }[] }).runs[0].id;

    await a.stop('SIGKILL');
    const b = await startServer(env);
    servers.push(b);
    let run: { status: string; error: { code: string } | null } | undefined;
    for (let i = 0; i < 100; i++) {
      run = (await (await call(b, 'GET', `/api/v1/runs/${runId}`)).json()) as typeof run;
      if (run!.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(run).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    // Its end settled the reservation: nothing is held, and the next run is admitted.
    const usage = ((await (await call(b, 'GET', '/api/v1/limits')).json()) as { usage: { reservedUsd: number; runningRuns: number } })
      .usage;
    expect(usage).toMatchObject({ reservedUsd: 0, runningRuns: 0 });
    const next = await call(b, 'POST', `/api/v1/agents/${agent.id}/execute`, { message: 'hello' });
    expect(next.status).toBe(200);
    expect(((await next.json()) as { status: string }).status).toBe('completed');
  }, 120_000);
});
