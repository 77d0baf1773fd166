import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAimock } from '../helpers/aimock.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { sample } from './helpers.js';

/**
 * The model breakers in GET /metrics (docs/operations.md "Observability"): read from this process's
 * breakers when scraped. aimock answers 500s; two failed calls (each after its two attempts) open a model's breaker.
 */

const TOKEN = 'metrics-token-0123456789';

describe('agentry_model_breaker_state', () => {
  let mock: LLMock;
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    mock = await startAimock();
    t = await startApp({
      METRICS_TOKEN: TOKEN,
      OPENAI_BASE_URL: `${mock.url}/v1`,
      OPENAI_API_KEY: 'sk-test',
      MODEL_RETRY_MAX_ATTEMPTS: '2',
      MODEL_RETRY_BASE_MS: '1',
      MODEL_BREAKER_FAILURES: '2',
      // Longer than any test: an opened breaker stays open while it is read.
      MODEL_BREAKER_COOLDOWN_MS: '3600000',
    });
    ({ key } = await t.tenant('breakers'));
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

  it('shows a model’s breaker closed after a success, open (2) once its provider failed enough, and counts the opening', async () => {
    mock.addFixture({ match: { userMessage: 'fine' }, response: { content: 'Fine.' } });
    mock.addFixture({
      match: { userMessage: 'broken' },
      response: { error: { message: 'The server had an error', type: 'server_error' }, status: 500 },
    });
    const healthy = await t.agent(key, { name: 'healthy', appId: 'a', model: 'openai/gpt-5-mini' });
    const broken = await t.agent(key, { name: 'broken', appId: 'a', model: 'openai/gpt-4.1' });
    expect(sample(await scrape(), 'agentry_model_breaker_state', { provider: 'openai', model: 'gpt-5-mini' })).toBeUndefined();

    expect((await execute(t, key, healthy.id, { message: 'fine' })).response.status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await execute(t, key, broken.id, { message: 'broken' })).response.status).toBe(502);

    const text = await scrape();
    expect(sample(text, 'agentry_model_breaker_state', { provider: 'openai', model: 'gpt-5-mini' })).toBe(0);
    expect(sample(text, 'agentry_model_breaker_state', { provider: 'openai', model: 'gpt-4.1' })).toBe(2);
    expect(sample(text, 'agentry_model_breaker_opened', { provider: 'openai', model: 'gpt-5-mini' })).toBe(0);
    expect(sample(text, 'agentry_model_breaker_opened', { provider: 'openai', model: 'gpt-4.1' })).toBe(1);
  });
});
