import type { LLMock } from '@copilotkit/aimock';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { providerEnv, startAimock } from '../helpers/aimock.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute as executeAgent } from '../helpers/execute.js';

/**
 * The breaker counts calls, not attempts, and opens on a sustained failure rate (docs/models.md, "The
 * breaker"; issue 34, item 4): a flaky provider whose retries get through, or one failing every other
 * call, or one rate limiting, keeps being called; one that is down is skipped, and later calls fail
 * fast. aimock (@copilotkit/aimock) answers each test's own model, its failures scripted by
 * sequenceIndex; 3 attempts 1 ms apart; the breaker opens at 2 failed calls making 80 % of the
 * window's (60 s) calls. The window's passing is crossed by moving Date.now, never by waiting.
 */

let mock: LLMock;
let t: TestApp;
let key: string;

beforeAll(async () => {
  mock = await startAimock();
  t = await startApp({
    ...providerEnv(mock),
    MODEL_RETRY_MAX_ATTEMPTS: '3',
    MODEL_RETRY_BASE_MS: '1',
    MODEL_BREAKER_FAILURES: '2',
    MODEL_BREAKER_FAILURE_RATE: '80',
    MODEL_BREAKER_WINDOW_MS: '60000',
    MODEL_BREAKER_COOLDOWN_MS: '600000',
  });
  ({ key } = await t.tenant());
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});
afterEach(() => {
  vi.restoreAllMocks();
});

const name = (id: string) => id.slice(id.indexOf('/') + 1);
const breakerOf = (id: string) => t.services.models.breakers.states().find((b) => b.model === id);
/** Requests `id` received carrying `message`. */
const asked = (id: string, message: string) =>
  mock.getRequests().filter((e) => e.body?.model === name(id) && JSON.stringify(e.body ?? '').includes(message)).length;

const serverError = { error: { message: 'The server had an error', type: 'server_error' }, status: 500 };
const fails = (id: string, message: string, sequenceIndex?: number) =>
  mock.addFixture({
    match: { userMessage: message, model: name(id), ...(sequenceIndex === undefined ? {} : { sequenceIndex }) },
    response: serverError,
  });
const answers = (id: string, message: string, content: string, sequenceIndex?: number) =>
  mock.addFixture({
    match: { userMessage: message, model: name(id), ...(sequenceIndex === undefined ? {} : { sequenceIndex }) },
    response: { content },
  });

const execute = (agentId: string, message: string) => executeAgent(t.api(key), agentId, { message });

describe('the breaker', () => {
  it('counts a call once, after its retries: a flaky provider whose retries get through never opens it', async () => {
    const model = 'openai-compatible/br-flaky';
    const a = await t.agent(key, { name: 'flaky', appId: 'a', model, tools: [] });
    for (let i = 0; i < 6; i++) {
      const message = `flaky ${i}`;
      // Two failed attempts, then an answer: 12 failed attempts in all, every call answered.
      fails(model, message, 0);
      fails(model, message, 1);
      answers(model, message, `Answer ${i}.`, 2);
      const res = await execute(a.id, message);
      expect(res.response.status, JSON.stringify(res.error)).toBe(200);
      expect(res.run!.output).toBe(`Answer ${i}.`);
      expect(asked(model, message)).toBe(3);
    }
    expect(breakerOf(model)).toMatchObject({ status: 'closed', recentCalls: 6, recentFailures: 0, opened: 0 });
  });

  it('stays closed when every other call fails: 50 % is below the rate that opens it', async () => {
    const model = 'openai-compatible/br-alternating';
    const a = await t.agent(key, { name: 'alternating', appId: 'a', model, tools: [] });
    for (let i = 0; i < 10; i++) {
      const message = `alternating ${i}`;
      if (i % 2) fails(model, message);
      else answers(model, message, 'Fine.');
      const res = await execute(a.id, message);
      expect(res.response.status, JSON.stringify(res.error)).toBe(i % 2 ? 502 : 200);
      // Each call was made: the breaker never skipped one.
      expect(asked(model, message)).toBe(i % 2 ? 3 : 1);
    }
    expect(breakerOf(model)).toMatchObject({ status: 'closed', recentCalls: 10, recentFailures: 5, opened: 0 });
  });

  it('leaves rate limits out: calls that end rate limited never open it', async () => {
    const model = 'openai-compatible/br-limited';
    const a = await t.agent(key, { name: 'limited', appId: 'a', model, tools: [] });
    const message = 'rate limited every time';
    mock.addFixture({
      match: { userMessage: message, model: name(model) },
      response: { error: { message: 'Rate limit reached', type: 'rate_limit_error' }, status: 429, retryAfter: 0 },
    });
    for (let i = 0; i < 5; i++) expectProblem(await execute(a.id, message), 502, 'provider_rate_limited');
    expect(asked(model, message)).toBe(15);
    expect(breakerOf(model)).toMatchObject({ status: 'closed', recentCalls: 0, recentFailures: 0, opened: 0 });
  });

  it('opens on a full outage; later calls fail fast without reaching the provider, with a clear code and words', async () => {
    const model = 'openai-compatible/br-down';
    const a = await t.agent(key, { name: 'down', appId: 'a', model, tools: [] });
    const message = 'provider down';
    fails(model, message);
    for (let i = 0; i < 2; i++) {
      const res = await execute(a.id, message);
      expectProblem(res, 502, 'provider_unavailable');
      expect(res.error!.detail).toContain('The server had an error');
    }
    expect(asked(model, message)).toBe(6);
    expect(breakerOf(model)).toMatchObject({ status: 'open', recentCalls: 2, recentFailures: 2, opened: 1 });

    for (let i = 0; i < 5; i++) {
      const res = await execute(a.id, message);
      expectProblem(res, 502, 'provider_unavailable');
      expect(res.error!.detail).toContain('circuit breaker open');
    }
    // Not one more request: the provider is left alone while it is down.
    expect(asked(model, message)).toBe(6);
  });

  it('forgets failures older than its window', async () => {
    const model = 'openai-compatible/br-window';
    const a = await t.agent(key, { name: 'window', appId: 'a', model, tools: [] });
    fails(model, 'window failing');
    const realNow = Date.now.bind(Date);
    let offset = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offset);
    expectProblem(await execute(a.id, 'window failing'), 502, 'provider_unavailable');
    expect(breakerOf(model)).toMatchObject({ status: 'closed', recentCalls: 1, recentFailures: 1 });
    // Two minutes later that failure is out of the window: a second one alone does not open it.
    offset += 120_000;
    expectProblem(await execute(a.id, 'window failing'), 502, 'provider_unavailable');
    expect(breakerOf(model)).toMatchObject({ status: 'closed', recentCalls: 1, recentFailures: 1, opened: 0 });
  });
});
