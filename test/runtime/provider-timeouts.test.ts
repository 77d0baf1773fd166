import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startAimock } from '../helpers/aimock.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

/**
 * Model-call timeouts (docs/models.md, "Timeouts"; issue 34, item 6): a provider that accepts the
 * connection and never answers, or starts answering and then stalls, is a retryable provider_timeout,
 * never a run held for minutes. The OpenAI-compatible provider points at a local server that takes the
 * request and answers nothing (or one chunk, then nothing); aimock (@copilotkit/aimock) holds its answer
 * back with its deterministic `latencyMs`, and answers the fallback. Limits of 300 ms against a provider
 * that never answers: no test depends on how fast the machine is.
 */

/** A server that takes each request and never answers it (`stall`: answers the headers and one chunk first). */
async function startSilentServer(mode: 'silent' | 'stall') {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push(body);
      if (mode === 'silent') return;
      // The answer's headers and its first chunk (the assistant's role, no text yet), then nothing more.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = {
        id: 'c1',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'm',
        choices: [{ index: 0, delta: { role: 'assistant' } }],
      };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let mock: LLMock;
let silent: Awaited<ReturnType<typeof startSilentServer>>;
let t: TestApp;
let key: string;

beforeAll(async () => {
  mock = await startAimock();
  silent = await startSilentServer('silent');
  t = await startApp({
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'sk-test',
    OPENAI_COMPATIBLE_BASE_URL: silent.url,
    MODEL_RETRY_MAX_ATTEMPTS: '2',
    MODEL_RETRY_BASE_MS: '1',
    MODEL_FIRST_BYTE_TIMEOUT_MS: '300',
    MODEL_IDLE_TIMEOUT_MS: '300',
    MODEL_TOTAL_TIMEOUT_MS: '60000',
    MODEL_BREAKER_FAILURES: '0',
  });
  ({ key } = await t.tenant());
});
afterAll(async () => {
  await t?.close();
  await silent?.close();
  await mock?.stop();
});

const getRun = (runId: string) => t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });

describe('a provider that never answers', () => {
  it('fails the run with provider_timeout after its attempts, each cut at the first-byte limit', async () => {
    const a = await t.agent(key, { name: 'silent', appId: 'a', model: 'openai-compatible/silent-model', tools: [] });
    const before = silent.requests.length;
    const res = await execute(t.api(key), a.id, { message: 'anyone there?' });
    expectProblem(res, 502, 'provider_timeout');
    expect(res.error!.detail).toContain('the provider did not answer in time: no answer began within 300 ms');
    // Retried as any timeout: two attempts, both sent.
    expect(silent.requests.length - before).toBe(2);
    const runId = /\(run ([0-9a-f-]+)\)$/.exec(res.error!.detail)![1];
    const run = (await getRun(runId)).data!;
    expect(run).toMatchObject({ status: 'failed', error: { code: 'provider_timeout' } });
  });

  it('hands the step to the fallback model once the silent one’s attempts timed out', async () => {
    const message = 'silent primary, steady fallback';
    mock.addFixture({ match: { userMessage: message }, response: { content: 'The fallback answered.' } });
    const a = await t.agent(key, {
      name: 'silent with fallback',
      appId: 'a',
      model: 'openai-compatible/silent-model',
      tools: [],
      configuration: { fallbackModels: ['openai/steady'] },
    });
    const res = await execute(t.api(key), a.id, { message });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run!.output).toBe('The fallback answered.');
    const run = (await getRun(res.run!.runId)).data!;
    expect(run.steps[0].model).toBe('openai/steady');
  });

  it('retries a provider slow to start (aimock holds the first answer back), then answers', async () => {
    const message = 'slow to start once';
    mock.addFixture({ match: { userMessage: message, sequenceIndex: 0 }, response: { content: 'late' }, chaos: { latencyMs: 10_000 } });
    mock.addFixture({ match: { userMessage: message, sequenceIndex: 1 }, response: { content: 'On time.' } });
    const a = await t.agent(key, { name: 'slow', appId: 'a', model: 'openai/slow-model', tools: [] });
    const res = await execute(t.api(key), a.id, { message });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    // The second answer: the first request, still held back, was given up at 300 ms (aimock journals it only once it answers).
    expect(res.run!.output).toBe('On time.');
  });
});

describe('a provider that stalls part-way', () => {
  it('cuts an answer silent for longer than the idle limit: provider_timeout after the attempts', async () => {
    const stalling = await startSilentServer('stall');
    const app = await startApp({
      OPENAI_COMPATIBLE_BASE_URL: stalling.url,
      MODEL_RETRY_MAX_ATTEMPTS: '2',
      MODEL_RETRY_BASE_MS: '1',
      MODEL_FIRST_BYTE_TIMEOUT_MS: '60000',
      MODEL_TIMEOUTS: JSON.stringify({ 'openai-compatible/stalling': { idleMs: 300 } }),
    });
    try {
      const { key: k } = await app.tenant();
      const a = await app.agent(k, { name: 'stalling', appId: 'a', model: 'openai-compatible/stalling', tools: [] });
      const res = await execute(app.api(k), a.id, { message: 'stall please' });
      expectProblem(res, 502, 'provider_timeout');
      expect(res.error!.detail).toContain('its answer stalled for 300 ms');
      expect(stalling.requests.length).toBe(2);
    } finally {
      await app.close();
      await stalling.close();
    }
  });
});

describe('configuration', () => {
  it('has defaults a user expects, per-model overrides field by field, and refuses a malformed MODEL_TIMEOUTS naming it', () => {
    expect(loadConfig({}).providers.timeouts).toEqual({ defaults: { firstByteMs: 60_000, idleMs: 60_000, totalMs: 600_000 }, models: {} });
    expect(t.services.models.timeoutsOf('openai/any')).toEqual({ firstByteMs: 300, idleMs: 300, totalMs: 60_000 });
    expect(t.services.models.timeoutsOf('builtin/echo')).toBeUndefined();
    expect(() => loadConfig({ MODEL_TIMEOUTS: '{"openai/x":{"idleMs":0}}' })).toThrow(/MODEL_TIMEOUTS.*entry "openai\/x" must be/);
    expect(() => loadConfig({ MODEL_TIMEOUTS: 'nope' })).toThrow(/MODEL_TIMEOUTS must be JSON/);
    expect(() => loadConfig({ MODEL_IDLE_TIMEOUT_MS: 'soon' })).toThrow(/MODEL_IDLE_TIMEOUT_MS/);
  });
});
