import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';

/**
 * GET /api/v1/runs/:runId says where a run's time and money went: each model step with the model that
 * answered it, its tokens, cost and duration; each tool call with its source, duration and outcome.
 * builtin/echo counts words as tokens; MODEL_PRICES gives it a price so step costs are not zero.
 */

let t: TestApp;
let key: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  // USD per million tokens: 1,000,000 for input and 2,000,000 for output, so a token costs 1 or 2 USD.
  t = await startApp({ MODEL_PRICES: JSON.stringify({ 'builtin/echo': { input: 1_000_000, output: 2_000_000 } }) });
  ({ key } = await t.tenant('steps'));
  mcp = await startMcpServer();
});
afterAll(async () => {
  await t?.close();
  await mcp?.close();
});

describe('a run’s steps', () => {
  it('names each step’s model, tokens, cost and duration, and each tool call’s source, duration and outcome', async () => {
    const helper = await t.agent(key, { name: 'Helper' });
    const agent = await t.agent(key, {
      name: 'Lead',
      tools: [
        { type: 'mcp', url: mcp.url },
        { type: 'agent', agentId: helper.id, name: 'ask_helper' },
      ],
    });
    const executed = await execute(t.api(key), agent.id, {
      message: '/tool add {"a":1,"b":2}\n/tool ask_helper {"message":"hi"}\n/tool add {"a":"x"}',
    });
    expect(executed.response.status, JSON.stringify(executed.error)).toBe(200);

    const { data, response } = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: executed.run!.runId } } });
    expect(response.status).toBe(200);
    const run = data!;
    expect(run.steps).toHaveLength(2);
    const [first, second] = run.steps;
    expect(first).toMatchObject({ index: 0, model: 'builtin/echo', finishReason: 'tool-calls' });
    expect(first.toolCallIds).toEqual(run.toolCalls.map((c) => c.id));
    expect(second).toMatchObject({ index: 1, model: 'builtin/echo', finishReason: 'stop' });
    for (const step of run.steps) {
      // Priced at the model's price: 1 USD per input token, 2 per output token.
      expect(step.cost).toBeCloseTo(step.usage.inputTokens + 2 * step.usage.outputTokens, 6);
      expect(step.durationMs).toBe(Date.parse(step.completedAt!) - Date.parse(step.startedAt!));
      expect(step.durationMs).toBeGreaterThanOrEqual(0);
    }
    // The steps' costs make up the run's.
    expect(first.cost! + second.cost!).toBeCloseTo(run.cost, 6);

    expect(run.toolCalls.map((c) => [c.name, c.source, c.outcome, c.errorCode])).toEqual([
      ['add', 'mcp', 'ok', null],
      ['ask_helper', 'delegation', 'ok', null],
      ['add', 'mcp', 'error', 'invalid_tool_call'],
    ]);
    for (const call of run.toolCalls) expect(call.durationMs).toBe(Date.parse(call.completedAt!) - Date.parse(call.startedAt));
  });

  it('a step whose model call failed is still recorded with its model and time', async () => {
    const agent = await t.agent(key, { name: 'Failing' });
    // The run fails, so the answer is a problem: the run is named by its x-run-id header.
    const executed = await execute(t.api(key), agent.id, { message: '/fail boom' });
    const runId = executed.run?.runId ?? executed.response.headers.get('x-run-id');
    const { data } = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: String(runId) } } });
    expect(data!.status).toBe('failed');
    expect(data!.steps).toHaveLength(1);
    expect(data!.steps[0]).toMatchObject({ model: 'builtin/echo', startedAt: expect.any(String), durationMs: expect.any(Number) });
  });
});
