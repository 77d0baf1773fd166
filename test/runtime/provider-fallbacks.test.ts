import type { LLMock } from '@copilotkit/aimock';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { providerEnv, startAimock } from '../helpers/aimock.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { readSse } from '../helpers/sse.js';

/**
 * Fallback models and the breaker (docs/models.md "Fallback models", "The breaker"), through the real
 * provider packages against aimock speaking each vendor's API. Each test names its own models (the
 * breaker is per model) and its own message; aimock's journal tells which model was asked how often.
 * Retries take 2 attempts 1 ms apart; the breaker opens after 2 failed calls (each after its retries)
 * making at least 80 % of its recent calls, and skips its model for 10 minutes, a wait the half-open test crosses by moving Date.now, never by waiting.
 */

let mock: LLMock;
let t: TestApp;
let key: string;

// USD per million tokens: the fallbacks cost ten times the primaries, so a step priced at the wrong model shows.
const PRICES: Record<string, { input: number; output: number }> = {};
const PRIMARY_PRICE = { input: 1, output: 2 };
const FALLBACK_PRICE = { input: 10, output: 20 };
// Every answer's usage, in each vendor's field names (each handler takes its own).
const USAGE = { usage: { prompt_tokens: 1000, completion_tokens: 100, input_tokens: 1000, output_tokens: 100 } };

/** A model id of this file, priced as a primary or a fallback. */
function model(id: string, as: 'primary' | 'fallback') {
  PRICES[id] = as === 'primary' ? PRIMARY_PRICE : FALLBACK_PRICE;
  return id;
}

const PAIRS = [
  { primary: model('openai/fb-gpt-a', 'primary'), fallback: model('anthropic/fb-claude-a', 'fallback') },
  { primary: model('anthropic/fb-claude-b', 'primary'), fallback: model('openai-compatible/fb-qwen-b', 'fallback') },
  { primary: model('openai-compatible/fb-qwen-c', 'primary'), fallback: model('openai/fb-gpt-c', 'fallback') },
];
const BREAKER = { primary: model('openai/fb-breaker', 'primary'), fallback: model('anthropic/fb-breaker-backup', 'fallback') };
const STEPS = { primary: model('openai-compatible/fb-steps', 'primary'), fallback: model('anthropic/fb-steps-backup', 'fallback') };
const CANCEL = { primary: model('openai-compatible/fb-cancel', 'primary'), fallback: model('openai/fb-cancel-backup', 'fallback') };
const CUT = { primary: model('anthropic/fb-cut', 'primary'), fallback: model('openai/fb-cut-backup', 'fallback') };
const REFUSED = { primary: model('openai/fb-refused', 'primary'), fallback: model('anthropic/fb-refused-backup', 'fallback') };

beforeAll(async () => {
  mock = await startAimock();
  t = await startApp({
    ...providerEnv(mock),
    MODEL_RETRY_MAX_ATTEMPTS: '2',
    MODEL_RETRY_BASE_MS: '1',
    MODEL_RETRY_MAX_DELAY_MS: '120000',
    MODEL_BREAKER_FAILURES: '2',
    MODEL_BREAKER_COOLDOWN_MS: '600000',
    MODEL_PRICES: JSON.stringify(PRICES),
  });
  ({ key } = await t.tenant());
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});
afterEach(() => {
  vi.restoreAllMocks();
});

const name = (id: string) => id.slice(id.indexOf('/') + 1);

/** How many requests `id` received that carry this message. */
const asked = (id: string, message: string) =>
  mock.getRequests().filter((e) => e.body?.model === name(id) && JSON.stringify(e.body ?? '').includes(message)).length;

function fails(id: string, message: string, extra: Record<string, unknown> = {}) {
  mock.addFixture({
    match: { userMessage: message, model: name(id), ...extra },
    response: { error: { message: 'The engine is currently overloaded', type: 'server_error' }, status: 503 },
  });
}
function answers(id: string, message: string, content: string, extra: Record<string, unknown> = {}) {
  mock.addFixture({ match: { userMessage: message, model: name(id), ...extra }, response: { content, ...USAGE } });
}

const agent = (primary: string, fallbacks: string[]) =>
  t.agent(key, { name: 'fallbacks', appId: 'a', model: primary, tools: [], configuration: { fallbackModels: fallbacks } });

async function stream(agentId: string, message: string) {
  const events = await readSse(await t.fetch(`/api/v1/agents/${agentId}/stream`, key, { body: { message } }));
  const runId = await lastRunId(agentId);
  const run = (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;
  return { events, run };
}

async function lastRunId(agentId: string) {
  return (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } })).data!.runs[0].id;
}

const tokens = (events: { event: string; data: { text?: string } }[]) => events.filter((e) => e.event === 'token').map((e) => e.data.text);
const priced = (price: { input: number; output: number }, usage: { inputTokens: number; outputTokens: number }) =>
  (usage.inputTokens * price.input + usage.outputTokens * price.output) / 1e6;
const breakerOf = (id: string) => t.services.models.breakers.states().find((b) => b.model === id);

describe.each(PAIRS)('$primary failing, with $fallback listed', ({ primary, fallback }) => {
  it('the step goes to the fallback once the primary’s retries are spent; the run records and prices it', async () => {
    const message = `primary down ${primary}`;
    fails(primary, message);
    answers(fallback, message, 'Answered by the fallback.');
    const a = await agent(primary, [fallback]);
    expect(a.configuration.fallbackModels).toEqual([fallback]);
    const { events, run } = await stream(a.id, message);
    expect(asked(primary, message)).toBe(2);
    expect(asked(fallback, message)).toBe(1);
    expect(tokens(events).join('')).toBe('Answered by the fallback.');
    expect(events.at(-1)!.event).toBe('done');
    expect(run).toMatchObject({ status: 'completed', model: primary, output: 'Answered by the fallback.', error: null });
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]).toMatchObject({ model: fallback, usage: { inputTokens: 1000, outputTokens: 100 } });
    expect(run.cost).toBeCloseTo(priced(FALLBACK_PRICE, run.steps[0].usage), 9);
    expect(events.at(-1)!.data.cost).toBe(run.cost);
  });
});

describe('the breaker', () => {
  it('opens after failed calls: its model is skipped for the cool-down, then one probe goes through (half-open)', async () => {
    const a = await agent(BREAKER.primary, [BREAKER.fallback]);
    // One failed call (its two attempts) does not open it; the fallback answers.
    fails(BREAKER.primary, 'breaker one');
    answers(BREAKER.fallback, 'breaker one', 'Backup one.');
    expect((await stream(a.id, 'breaker one')).run).toMatchObject({ status: 'completed', output: 'Backup one.' });
    expect(asked(BREAKER.primary, 'breaker one')).toBe(2);
    expect(breakerOf(BREAKER.primary)).toMatchObject({ status: 'closed', recentCalls: 1, recentFailures: 1, opened: 0 });
    // A second failed call does: two of two.
    fails(BREAKER.primary, 'second breaker failure');
    answers(BREAKER.fallback, 'second breaker failure', 'Backup again.');
    expect((await stream(a.id, 'second breaker failure')).run).toMatchObject({ status: 'completed', output: 'Backup again.' });
    expect(asked(BREAKER.primary, 'second breaker failure')).toBe(2);
    expect(breakerOf(BREAKER.primary)).toMatchObject({ status: 'open', recentCalls: 2, recentFailures: 2, opened: 1 });

    // Open: the primary is not asked at all, though it would answer now.
    answers(BREAKER.primary, 'breaker two', 'Primary two.');
    answers(BREAKER.fallback, 'breaker two', 'Backup two.');
    const second = await stream(a.id, 'breaker two');
    expect(asked(BREAKER.primary, 'breaker two')).toBe(0);
    expect(second.run).toMatchObject({ status: 'completed', output: 'Backup two.' });
    expect(second.run.steps[0].model).toBe(BREAKER.fallback);

    // Past the cool-down, one probe: it fails, and the breaker opens again at once (no second attempt).
    const realNow = Date.now.bind(Date);
    let offset = 11 * 60_000;
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + offset);
    expect(breakerOf(BREAKER.primary)!.status).toBe('half_open');
    fails(BREAKER.primary, 'breaker three');
    answers(BREAKER.fallback, 'breaker three', 'Backup three.');
    const third = await stream(a.id, 'breaker three');
    expect(asked(BREAKER.primary, 'breaker three')).toBe(1);
    expect(third.run).toMatchObject({ status: 'completed', output: 'Backup three.' });
    expect(breakerOf(BREAKER.primary)).toMatchObject({ status: 'open', opened: 2 });

    // Another cool-down later the probe succeeds: closed, and the primary answers again.
    offset += 11 * 60_000;
    answers(BREAKER.primary, 'breaker four', 'Primary four.');
    const fourth = await stream(a.id, 'breaker four');
    expect(asked(BREAKER.primary, 'breaker four')).toBe(1);
    expect(fourth.run).toMatchObject({ status: 'completed', output: 'Primary four.' });
    expect(fourth.run.steps[0].model).toBe(BREAKER.primary);
    expect(breakerOf(BREAKER.primary)).toMatchObject({ status: 'closed', recentFailures: 0, retryAt: null });
  });

  it('with every listed model skipped, the run fails with provider_unavailable and the first real failure’s words', async () => {
    // BREAKER.primary is closed again; open it once more, with a fallback that fails too.
    const failing = model('openai-compatible/fb-breaker-both', 'fallback');
    const a = await agent(BREAKER.primary, [failing]);
    fails(BREAKER.primary, 'both down');
    fails(failing, 'both down');
    // Two failed calls of each open both.
    for (let i = 0; i < 2; i++) {
      const res = await execute(t.api(key), a.id, { message: 'both down' });
      expectProblem(res, 502, 'provider_unavailable');
      expect(res.error!.detail).toContain('The engine is currently overloaded');
    }
    expect(breakerOf(BREAKER.primary)!.status).toBe('open');
    expect(breakerOf(failing)!.status).toBe('open');
    // Both open: neither is asked, and the run says why.
    const skipped = await execute(t.api(key), a.id, { message: 'both skipped' });
    expectProblem(skipped, 502, 'provider_unavailable');
    expect(skipped.error!.detail).toContain('circuit breaker open');
    expect(asked(BREAKER.primary, 'both skipped') + asked(failing, 'both skipped')).toBe(0);
  });
});

describe('a run whose steps are answered by different models', () => {
  it('records the model of each step and prices each at its own model', async () => {
    const message = 'look it up, then answer';
    // Step 0: the primary calls a tool. Step 1 (the tool's result sent back): the primary is down, the fallback answers.
    mock.addFixture({
      match: { userMessage: message, model: name(STEPS.primary), hasToolResult: false },
      response: { toolCalls: [{ name: 'lookup', arguments: '{"q":"x"}' }], ...USAGE },
    });
    fails(STEPS.primary, message, { hasToolResult: true });
    answers(STEPS.fallback, message, 'Looked it up.', { hasToolResult: true });
    const a = await agent(STEPS.primary, [STEPS.fallback]);
    const { events, run } = await stream(a.id, message);
    expect(events.at(-1)!.event).toBe('done');
    expect(run).toMatchObject({ status: 'completed', output: 'Looked it up.' });
    expect(run.steps.map((s) => s.model)).toEqual([STEPS.primary, STEPS.fallback]);
    const expected = priced(PRIMARY_PRICE, run.steps[0].usage) + priced(FALLBACK_PRICE, run.steps[1].usage);
    expect(run.steps[0].usage.inputTokens).toBeGreaterThan(0);
    expect(run.steps[1].usage.inputTokens).toBeGreaterThan(0);
    expect(run.cost).toBeCloseTo(expected, 9);
    expect(run.steps[0].cost).toBeCloseTo(priced(PRIMARY_PRICE, run.steps[0].usage), 9);
    expect(run.steps[1].cost).toBeCloseTo(priced(FALLBACK_PRICE, run.steps[1].usage), 9);
  });
});

describe('what does not fall back', () => {
  it('a stream cut after its first token: what was said stays, said once, and the fallback is not asked', async () => {
    const message = 'cut after a few words';
    const answer = 'One two three four five six seven.';
    mock.addFixture({
      match: { userMessage: message, model: name(CUT.primary) },
      response: { content: answer },
      chunkSize: 4,
      // Anthropic's stream opens with 2 chunks before its first text.
      truncateAfterChunks: 4,
      latency: 10,
    });
    answers(CUT.fallback, message, 'Should not be heard.');
    const a = await agent(CUT.primary, [CUT.fallback]);
    const { events, run } = await stream(a.id, message);
    const said = tokens(events).join('');
    expect(said.length).toBeGreaterThan(0);
    expect(answer.startsWith(said) && said !== answer).toBe(true);
    expect(asked(CUT.fallback, message)).toBe(0);
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'provider_unavailable' } });
    expect(run).toMatchObject({ status: 'failed', output: said });
    expect(run.steps[0].model).toBe(CUT.primary);
  });

  it('a request the provider refused (400): provider_bad_request, the fallback not asked', async () => {
    const message = 'refused request';
    mock.addFixture({
      match: { userMessage: message, model: name(REFUSED.primary) },
      response: { error: { message: 'max_tokens is too large', type: 'invalid_request_error' }, status: 400 },
    });
    answers(REFUSED.fallback, message, 'Should not be heard.');
    const a = await agent(REFUSED.primary, [REFUSED.fallback]);
    const res = await execute(t.api(key), a.id, { message });
    expectProblem(res, 502, 'provider_bad_request');
    expect(res.error!.detail).toContain('max_tokens is too large');
    expect(asked(REFUSED.primary, message)).toBe(1);
    expect(asked(REFUSED.fallback, message)).toBe(0);
  });

  it('cancel during a backoff ends the run at once: no fallback is asked', { timeout: 20_000 }, async () => {
    const message = 'cancel while backing off';
    mock.addFixture({
      match: { userMessage: message, model: name(CANCEL.primary) },
      response: { error: { message: 'Rate limit reached', type: 'rate_limit_error' }, status: 429, retryAfter: 60 },
    });
    answers(CANCEL.fallback, message, 'too late');
    const a = await agent(CANCEL.primary, [CANCEL.fallback]);
    const events = readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message } }));
    await vi.waitFor(() => expect(asked(CANCEL.primary, message)).toBeGreaterThan(0), { timeout: 10_000, interval: 20 });
    expect(asked(CANCEL.primary, message)).toBe(1);
    const runId = await lastRunId(a.id);
    const res = await t.api(key).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId } } });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    expect((await events).at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled' } });
    expect(asked(CANCEL.primary, message)).toBe(1);
    expect(asked(CANCEL.fallback, message)).toBe(0);
  });
});

describe('fallbackModels in an agent’s configuration', () => {
  it('defaults to none, is read back as set, and an empty list clears it', async () => {
    const a = await t.agent(key, { model: 'openai/gpt-4o-mini' });
    expect(a.configuration.fallbackModels).toEqual([]);
    const byId = { params: { path: { id: a.id } } };
    const set = await t.api(key).POST('/api/v1/agents/{id}', {
      ...byId,
      body: { configuration: { fallbackModels: ['anthropic/claude-haiku-4-5', 'builtin/echo'] } },
    });
    expect(set.response.status, JSON.stringify(set.error)).toBe(200);
    expect(set.data!.configuration.fallbackModels).toEqual(['anthropic/claude-haiku-4-5', 'builtin/echo']);
    const read = await t.api(key).GET('/api/v1/agents/{id}', byId);
    expect(read.data!.configuration.fallbackModels).toEqual(['anthropic/claude-haiku-4-5', 'builtin/echo']);
    const cleared = await t.api(key).POST('/api/v1/agents/{id}', { ...byId, body: { configuration: { fallbackModels: [] } } });
    expect(cleared.data!.configuration.fallbackModels).toEqual([]);
  });

  it.each([
    { fallbackModels: ['gpt-4o'], i: 0, says: 'must be provider/model-name' },
    { fallbackModels: ['builtin/echo', 'nope/x'], i: 1, says: 'unknown provider "nope"' },
    { fallbackModels: ['openai/gpt-4o-mini'], i: 0, says: 'the agent’s own model' },
    { fallbackModels: ['builtin/echo', 'builtin/echo'], i: 1, says: 'listed twice' },
  ])('refuses $fallbackModels with a 400 naming the entry', async ({ fallbackModels, i, says }) => {
    const res = await t.api(key).POST('/api/v1/agents', {
      body: { name: 'x', appId: 'a', model: 'openai/gpt-4o-mini', configuration: { fallbackModels } },
    });
    expectProblem(res, 400, 'validation_failed');
    expect(res.error!.errors).toContainEqual({ path: `body.configuration.fallbackModels.${i}`, message: expect.stringContaining(says) });
  });

  it('refuses a model whose provider this server is not configured for, and more than four', async () => {
    const bare = await startApp({ MODEL_BREAKER_FAILURES: '2' });
    try {
      const { key: k } = await bare.tenant();
      const res = await bare.api(k).POST('/api/v1/agents', {
        body: { name: 'x', appId: 'a', configuration: { fallbackModels: ['anthropic/claude-haiku-4-5'] } },
      });
      expectProblem(res, 400, 'validation_failed');
      expect(res.error!.errors).toContainEqual({
        path: 'body.configuration.fallbackModels.0',
        message: expect.stringContaining('ANTHROPIC_API_KEY'),
      });
    } finally {
      await bare.close();
    }
    const tooMany = await t.api(key).POST('/api/v1/agents', {
      body: { name: 'x', appId: 'a', configuration: { fallbackModels: PAIRS.flatMap((p) => [p.primary, p.fallback]) } },
    });
    expectProblem(tooMany, 400, 'validation_failed');
    expect(tooMany.error!.errors![0].path).toContain('fallbackModels');
  });

  it('refuses a model change to one of the agent’s fallbacks', async () => {
    const a = await t.agent(key, { model: 'openai/gpt-4o-mini', configuration: { fallbackModels: ['builtin/echo'] } });
    const res = await t.api(key).POST('/api/v1/agents/{id}', { params: { path: { id: a.id } }, body: { model: 'builtin/echo' } });
    expectProblem(res, 400, 'validation_failed');
    expect(res.error!.errors).toContainEqual({ path: 'body.configuration.fallbackModels.0', message: 'is the agent’s own model' });
  });
});
