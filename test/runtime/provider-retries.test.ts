import type { LLMock } from '@copilotkit/aimock';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { providerEnv, requestsWith, startAimock, VENDOR_MODELS } from '../helpers/aimock.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { readSse } from '../helpers/sse.js';

/**
 * Retries and provider errors (docs/models.md "Retries and provider errors"), through the real
 * provider packages against aimock (@copilotkit/aimock) speaking each vendor's API. Each test's
 * fixtures match its own message; aimock's request journal counts the attempts. Backoffs are 1 ms
 * (MODEL_RETRY_BASE_MS) so no test waits on a clock, except the Retry-After of 1 s it must honour.
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
    // Above the cancel test's Retry-After of 60 s, so that wait is really taken.
    MODEL_RETRY_MAX_DELAY_MS: '120000',
  });
  ({ key } = await t.tenant());
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});

/** How many requests the provider received for this message. */
const attempts = (message: string) => requestsWith(mock, message).length;

const agent = (model: string) => t.agent(key, { name: 'retries', appId: 'a', model });

async function stream(model: string, message: string) {
  const a = await agent(model);
  const events = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message } }));
  const run = await lastRun(t, key, a.id);
  return { events, run };
}

/** The agent's newest run, read whole. */
async function lastRun(app: TestApp, k: string, agentId: string) {
  const runs = (await app.api(k).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } })).data!.runs;
  return (await app.api(k).GET('/api/v1/runs/{runId}', { params: { path: { runId: runs[0].id } } })).data!;
}

const tokens = (events: { event: string; data: { text?: string } }[]) => events.filter((e) => e.event === 'token').map((e) => e.data.text);

describe.each(VENDOR_MODELS)('$model', ({ model, preamble }) => {
  it('waits out a 429 with Retry-After, then answers', async () => {
    const message = `rate limited once ${model}`;
    mock.addFixture({
      match: { userMessage: message, sequenceIndex: 0 },
      response: { error: { message: 'Rate limit reached', type: 'rate_limit_error' }, status: 429, retryAfter: 1 },
    });
    mock.addFixture({ match: { userMessage: message, sequenceIndex: 1 }, response: { content: 'Done waiting.' } });
    const { events, run } = await stream(model, message);
    expect(attempts(message)).toBe(2);
    expect(tokens(events).join('')).toBe('Done waiting.');
    expect(events.at(-1)!.event).toBe('done');
    expect(run).toMatchObject({ status: 'completed', output: 'Done waiting.', error: null });
  });

  it('retries a 500 twice, then answers', async () => {
    const message = `two server errors ${model}`;
    for (const sequenceIndex of [0, 1]) {
      mock.addFixture({
        match: { userMessage: message, sequenceIndex },
        response: { error: { message: 'The server had an error', type: 'server_error' }, status: 500 },
      });
    }
    mock.addFixture({ match: { userMessage: message, sequenceIndex: 2 }, response: { content: 'Third time.' } });
    const { events, run } = await stream(model, message);
    expect(attempts(message)).toBe(3);
    expect(tokens(events).join('')).toBe('Third time.');
    expect(run).toMatchObject({ status: 'completed', output: 'Third time.' });
  });

  it('fails with provider_unavailable and the provider’s message once the attempts are spent', async () => {
    const message = `always down ${model}`;
    mock.addFixture({
      match: { userMessage: message },
      response: { error: { message: 'The engine is currently overloaded', type: 'server_error' }, status: 503 },
    });
    const { events, run } = await stream(model, message);
    expect(attempts(message)).toBe(3);
    expect(events.map((e) => e.event)).toEqual(['error']);
    expect(events[0].data).toEqual({
      code: 'provider_unavailable',
      message: expect.stringContaining('The engine is currently overloaded'),
    });
    expect(run).toMatchObject({ status: 'failed', output: '', error: events[0].data });
  });

  it('does not retry a 400, and the execute problem says provider_bad_request with the provider’s message', async () => {
    const message = `bad request ${model}`;
    mock.addFixture({
      match: { userMessage: message },
      response: { error: { message: 'max_tokens is too large', type: 'invalid_request_error' }, status: 400 },
    });
    const a = await agent(model);
    const res = await execute(t.api(key), a.id, { message });
    expect(attempts(message)).toBe(1);
    expectProblem(res, 502, 'provider_bad_request');
    expect(res.error!.detail).toContain('max_tokens is too large');
    const runId = /\(run ([0-9a-f-]+)\)$/.exec(res.error!.detail)![1];
    const run = (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;
    expect(run).toMatchObject({
      status: 'failed',
      error: { code: 'provider_bad_request', message: expect.stringContaining('max_tokens is too large') },
    });
  });

  it('retries an answer that is not a stream (aimock’s malformed body), then answers', async () => {
    const message = `malformed once ${model}`;
    mock.addFixture({
      match: { userMessage: message, sequenceIndex: 0 },
      response: { content: 'Readable now.' },
      chaos: { malformedRate: 1 },
    });
    mock.addFixture({ match: { userMessage: message, sequenceIndex: 1 }, response: { content: 'Readable now.' } });
    const { events, run } = await stream(model, message);
    expect(attempts(message)).toBe(2);
    expect(tokens(events).join('')).toBe('Readable now.');
    expect(run).toMatchObject({ status: 'completed', output: 'Readable now.' });
  });

  it('fails with provider_unavailable when every answer is malformed, never with an empty success', async () => {
    const message = `always malformed ${model}`;
    mock.addFixture({ match: { userMessage: message }, response: { content: 'never read' }, chaos: { malformedRate: 1 } });
    const { events, run } = await stream(model, message);
    expect(attempts(message)).toBe(3);
    expect(events.map((e) => e.event)).toEqual(['error']);
    expect(events[0].data).toEqual({ code: 'provider_unavailable', message: expect.stringContaining('could not be read') });
    expect(run).toMatchObject({ status: 'failed', output: '', error: events[0].data });
  });

  it('retries a stream cut before its first token; the client sees the answer once', async () => {
    const message = `cut early ${model}`;
    mock.addFixture({
      match: { userMessage: message, sequenceIndex: 0 },
      response: { content: 'Whole answer.' },
      truncateAfterChunks: preamble,
      latency: 10,
    });
    mock.addFixture({ match: { userMessage: message, sequenceIndex: 1 }, response: { content: 'Whole answer.' } });
    const { events, run } = await stream(model, message);
    expect(attempts(message)).toBe(2);
    expect(tokens(events).join('')).toBe('Whole answer.');
    expect(events.at(-1)!.event).toBe('done');
    expect(run).toMatchObject({ status: 'completed', output: 'Whole answer.' });
  });

  it('does not repeat a stream cut after its first token: each token once, then an error with a stable code', async () => {
    const message = `cut late ${model}`;
    const answer = 'One two three four five six seven.';
    mock.addFixture({
      match: { userMessage: message },
      response: { content: answer },
      chunkSize: 4,
      truncateAfterChunks: preamble + 2,
      latency: 10,
    });
    const { events, run } = await stream(model, message);
    expect(attempts(message)).toBe(1);
    const said = tokens(events).join('');
    expect(said.length).toBeGreaterThan(0);
    expect(answer.startsWith(said) && said !== answer).toBe(true);
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'provider_unavailable' } });
    expect(run).toMatchObject({ status: 'failed', output: said, error: { code: 'provider_unavailable' } });
  });
});

describe('a provider that stays rate limited', () => {
  it('fails the run with provider_rate_limited after the last attempt', async () => {
    const message = 'always rate limited';
    mock.addFixture({
      match: { userMessage: message },
      response: { error: { message: 'Rate limit reached for requests', type: 'rate_limit_error' }, status: 429, retryAfter: 0 },
    });
    const a = await agent('openai/gpt-5-mini');
    const res = await execute(t.api(key), a.id, { message });
    expect(attempts(message)).toBe(3);
    expectProblem(res, 502, 'provider_rate_limited');
    expect(res.error!.detail).toContain('Rate limit reached for requests');
  });
});

describe('cancel during a backoff', () => {
  it('ends the run as cancelled without waiting out a Retry-After of 60 s', { timeout: 20_000 }, async () => {
    const message = 'cancel while waiting';
    mock.addFixture({
      match: { userMessage: message, sequenceIndex: 0 },
      response: { error: { message: 'Rate limit reached', type: 'rate_limit_error' }, status: 429, retryAfter: 60 },
    });
    mock.addFixture({ match: { userMessage: message, sequenceIndex: 1 }, response: { content: 'too late' } });
    const a = await agent('openai-compatible/qwen3-8b');
    const events = readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message } }));
    await vi.waitFor(() => expect(attempts(message)).toBeGreaterThan(0), { timeout: 10_000, interval: 20 });
    expect(attempts(message)).toBe(1);
    const runs = (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: a.id } } })).data!.runs;
    const res = await t.api(key).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId: runs[0].id } } });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    expect((await events).at(-1)).toMatchObject({ event: 'error', data: { code: 'cancelled' } });
    expect(attempts(message)).toBe(1);
  });
});

describe('a provider that cannot be reached', () => {
  it('fails with provider_unavailable in generic words: the base URL’s address and port stay in the server log', async () => {
    // A loopback port nobody listens on: connection refused.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const app = await startApp({
      OPENAI_COMPATIBLE_BASE_URL: `http://127.0.0.1:${port}/v1`,
      MODEL_RETRY_MAX_ATTEMPTS: '2',
      MODEL_RETRY_BASE_MS: '1',
    });
    try {
      const { key: k } = await app.tenant();
      const a = await app.agent(k, { name: 'unreachable', appId: 'a', model: 'openai-compatible/qwen3-8b' });
      const res = await execute(app.api(k), a.id, { message: 'anyone there?' });
      expectProblem(res, 502, 'provider_unavailable');
      expect(JSON.stringify(res.error)).not.toContain(String(port));
      expect(JSON.stringify(res.error)).not.toContain('127.0.0.1');
      expect(res.error!.detail).toContain('the provider could not be reached');
      const run = await lastRun(app, k, a.id);
      expect(run.error).toMatchObject({ code: 'provider_unavailable' });
      expect(JSON.stringify(run)).not.toContain(String(port));
      expect(JSON.stringify(run)).not.toContain('127.0.0.1');
    } finally {
      await app.close();
    }
  });
});
