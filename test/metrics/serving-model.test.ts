import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerEnv, startAimock } from '../helpers/aimock.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { shoutWaits } from '../approvals/helpers.js';
import { sample } from './helpers.js';

/**
 * GET /metrics charges each model step, its tokens, its cost and a provider's failure to the model that
 * served (or failed) it: a fallback's answer is the fallback's, never the agent's own model's (issue 34,
 * item 7). Providers are aimock (@copilotkit/aimock) speaking each vendor's API; retries are 1 ms apart.
 */

const TOKEN = 'serving-model-metrics-0123';
const PRIMARY = 'openai/sm-primary';
const FALLBACK = 'anthropic/sm-fallback';
const LONE = 'openai-compatible/sm-lone';
// USD per million tokens: the fallback costs ten times the primary, so cost charged to the wrong model shows.
const PRICES = { [PRIMARY]: { input: 1, output: 2 }, [FALLBACK]: { input: 10, output: 20 }, [LONE]: { input: 1, output: 1 } };
const USAGE = { usage: { prompt_tokens: 1000, completion_tokens: 100, input_tokens: 1000, output_tokens: 100 } };

let mock: LLMock;
let t: TestApp;
let key: string;

beforeAll(async () => {
  mock = await startAimock();
  t = await startApp({
    ...providerEnv(mock),
    METRICS_TOKEN: TOKEN,
    MODEL_RETRY_MAX_ATTEMPTS: '2',
    MODEL_RETRY_BASE_MS: '1',
    MODEL_BREAKER_FAILURES: '0',
    MODEL_PRICES: JSON.stringify(PRICES),
  });
  ({ key } = await t.tenant('serving'));
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});

// /metrics is not an operation of the OpenAPI document: read raw.
const scrape = async () => {
  const res = await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status, res.text).toBe(200);
  return res.text;
};
const labels = (id: string) => ({ provider: id.slice(0, id.indexOf('/')), model: id.slice(id.indexOf('/') + 1) });
const down = (id: string, message: string) =>
  mock.addFixture({
    match: { userMessage: message, model: labels(id).model },
    response: { error: { message: 'The engine is currently overloaded', type: 'server_error' }, status: 503 },
  });

describe('model metrics by the model that served', () => {
  it('charges a fallback’s step, tokens and cost to the fallback, and the primary’s retries to the primary', async () => {
    const message = 'served by the fallback';
    down(PRIMARY, message);
    mock.addFixture({ match: { userMessage: message, model: labels(FALLBACK).model }, response: { content: 'Fallback here.', ...USAGE } });
    const a = await t.agent(key, { name: 'served', appId: 'a', model: PRIMARY, tools: [], configuration: { fallbackModels: [FALLBACK] } });
    const res = await execute(t, key, a.id, { message });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.output).toBe('Fallback here.');

    const text = await scrape();
    expect(sample(text, 'agentry_model_steps_total', labels(FALLBACK))).toBe(1);
    expect(sample(text, 'agentry_model_tokens_total', { ...labels(FALLBACK), direction: 'input' })).toBe(1000);
    expect(sample(text, 'agentry_model_tokens_total', { ...labels(FALLBACK), direction: 'output' })).toBe(100);
    expect(sample(text, 'agentry_model_cost_usd_total', labels(FALLBACK))).toBeCloseTo((1000 * 10 + 100 * 20) / 1e6, 9);
    expect(res.data!.cost).toBeCloseTo((1000 * 10 + 100 * 20) / 1e6, 9);
    // The primary served nothing: none of it is charged there.
    expect(sample(text, 'agentry_model_steps_total', labels(PRIMARY))).toBeUndefined();
    expect(sample(text, 'agentry_model_tokens_total', { ...labels(PRIMARY), direction: 'input' })).toBeUndefined();
    expect(sample(text, 'agentry_model_cost_usd_total', labels(PRIMARY))).toBeUndefined();
    // Its one retry (2 attempts) is its own, and the run did not fail.
    expect(sample(text, 'agentry_model_provider_retries_total', { ...labels(PRIMARY), code: 'provider_unavailable' })).toBe(1);
    expect(sample(text, 'agentry_model_provider_errors_total', { ...labels(PRIMARY), code: 'provider_unavailable' })).toBeUndefined();
  });

  it('charges a run failed on its provider to the model that failed it: the last fallback tried', async () => {
    const message = 'both models down';
    down(LONE, message);
    down(FALLBACK, message);
    const a = await t.agent(key, { name: 'failing', appId: 'a', model: LONE, tools: [], configuration: { fallbackModels: [FALLBACK] } });
    const res = await execute(t, key, a.id, { message });
    expect(res.response.status).toBe(502);
    const text = await scrape();
    expect(sample(text, 'agentry_model_provider_errors_total', { ...labels(FALLBACK), code: 'provider_unavailable' })).toBe(1);
    expect(sample(text, 'agentry_model_provider_errors_total', { ...labels(LONE), code: 'provider_unavailable' })).toBeUndefined();
    expect(sample(text, 'agentry_model_provider_retries_total', { ...labels(LONE), code: 'provider_unavailable' })).toBe(1);
    expect(sample(text, 'agentry_model_provider_retries_total', { ...labels(FALLBACK), code: 'provider_unavailable' })).toBe(1);
  });
});

describe('agentry_approvals_waiting', () => {
  it('counts tool calls waiting for a person, beside tasks awaiting approval', async () => {
    const mcp = await startMcpServer();
    try {
      const a = await t.agent(key, { name: 'waits', appId: 'a', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });
      expect(sample(await scrape(), 'agentry_approvals_waiting', { kind: 'tool_call' })).toBe(0);
      const runIds: string[] = [];
      for (const text of ['one', 'two']) {
        const { data } = await execute(t, key, a.id, { message: `/tool shout {"text":"${text}"}` });
        expect(data!.status).toBe('awaiting_approval');
        runIds.push(data!.runId);
      }
      let text = await scrape();
      expect(sample(text, 'agentry_approvals_waiting', { kind: 'tool_call' })).toBe(2);
      expect(sample(text, 'agentry_approvals_waiting', { kind: 'task' })).toBe(0);

      // One decided: one waits.
      const inbox = await t.api(key).GET('/api/v1/approvals', { params: { query: { kind: 'tool_call' } } });
      const first = inbox.data!.approvals.find((x) => x.toolCall!.runId === runIds[0])!;
      const rejected = await t
        .api(key)
        .POST('/api/v1/approvals/{id}/reject', { params: { path: { id: first.id } }, body: { reason: 'no' } });
      expect(rejected.response.status).toBe(200);
      text = await scrape();
      expect(sample(text, 'agentry_approvals_waiting', { kind: 'tool_call' })).toBe(1);
    } finally {
      await mcp.close();
    }
  });
});
