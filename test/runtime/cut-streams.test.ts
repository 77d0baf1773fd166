import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerEnv, requestsWith, startAimock, VENDOR_MODELS } from '../helpers/aimock.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { readSse } from '../helpers/sse.js';

/**
 * A provider's stream cut mid-answer (docs/runtime.md, "Cut answers"; issue 34, item 5). A plain
 * execute, whose caller has received nothing yet, retries or falls back as for any failed call; the
 * run's events say what happened (`answer_cut`: the partial answer, then what followed). A streamed
 * call keeps what it said, and the stream names the cut before its error. aimock (@copilotkit/aimock)
 * cuts its socket after a number of chunks (`truncateAfterChunks`, with a latency between chunks so
 * they are flushed); retries are 1 ms apart.
 */

let mock: LLMock;
let t: TestApp;
let key: string;

beforeAll(async () => {
  mock = await startAimock();
  t = await startApp({ ...providerEnv(mock), MODEL_RETRY_MAX_ATTEMPTS: '2', MODEL_RETRY_BASE_MS: '1', MODEL_BREAKER_FAILURES: '0' });
  ({ key } = await t.tenant());
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});

const ANSWER = 'One two three four five six seven.';
type Event = { event: string; data: Record<string, unknown> };
const runEvents = async (runId: string): Promise<Event[]> => readSse(await t.fetch(`/api/v1/runs/${runId}/events`, key));
const tokens = (events: Event[]) => events.filter((e) => e.event === 'token').map((e) => e.data.text as string);

describe.each(VENDOR_MODELS)('$model', ({ model, preamble }) => {
  it('a plain execute whose answer is cut after its first words is retried: the whole answer once, the cut in the events', async () => {
    const message = `execute cut ${model}`;
    mock.addFixture({
      match: { userMessage: message, sequenceIndex: 0 },
      response: { content: ANSWER },
      chunkSize: 4,
      truncateAfterChunks: preamble + 2,
      latency: 10,
    });
    mock.addFixture({ match: { userMessage: message, sequenceIndex: 1 }, response: { content: ANSWER } });
    const a = await t.agent(key, { name: 'cut', appId: 'a', model, tools: [] });
    const res = await execute(t.api(key), a.id, { message });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run!.output).toBe(ANSWER);
    expect(requestsWith(mock, message)).toHaveLength(2);

    const events = await runEvents(res.run!.runId);
    const cut = events.find((e) => e.event === 'answer_cut')!;
    expect(cut.data).toMatchObject({ code: 'provider_unavailable', next: 'retry', model });
    const partial = cut.data.partial as string;
    expect(partial.length).toBeGreaterThan(0);
    expect(ANSWER.startsWith(partial) && partial !== ANSWER).toBe(true);
    // Followers saw the partial tokens, the cut, then the answer again from its start.
    const at = events.indexOf(cut);
    expect(tokens(events.slice(0, at)).join('')).toBe(partial);
    expect(tokens(events.slice(at)).join('')).toBe(ANSWER);
    expect(events.at(-1)!.event).toBe('done');
  });
});

describe('a plain execute cut on every attempt', () => {
  it('falls back to the next model, as for any failed call', async () => {
    const message = 'cut every time, then the fallback';
    mock.addFixture({
      match: { userMessage: message, model: 'cut-primary' },
      response: { content: ANSWER },
      chunkSize: 4,
      truncateAfterChunks: 3,
      latency: 10,
    });
    mock.addFixture({ match: { userMessage: message, model: 'steady-fallback' }, response: { content: 'From the fallback.' } });
    const a = await t.agent(key, {
      name: 'cut with fallback',
      appId: 'a',
      model: 'openai-compatible/cut-primary',
      tools: [],
      configuration: { fallbackModels: ['openai-compatible/steady-fallback'] },
    });
    const res = await execute(t.api(key), a.id, { message });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const { runId, output } = res.run!;
    expect(output).toBe('From the fallback.');
    const run = (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;
    expect(run.steps.map((s) => [s.model, s.text])).toEqual([['openai-compatible/steady-fallback', 'From the fallback.']]);
    const cuts = (await runEvents(runId)).filter((e) => e.event === 'answer_cut').map((e) => e.data.next);
    expect(cuts).toEqual(['retry', 'fallback']);
  });
});

describe('a streamed call cut after its first words', () => {
  it('keeps what it said, then names the cut (nothing follows but the failure), then the error', async () => {
    const message = 'streamed and cut';
    mock.addFixture({
      match: { userMessage: message },
      response: { content: ANSWER },
      chunkSize: 4,
      truncateAfterChunks: 3,
      latency: 10,
    });
    const a = await t.agent(key, { name: 'streamed cut', appId: 'a', model: 'openai-compatible/streamed-cut', tools: [] });
    const events: Event[] = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message } }));
    const said = tokens(events).join('');
    expect(said.length).toBeGreaterThan(0);
    expect(requestsWith(mock, message)).toHaveLength(1);
    expect(events.slice(-2).map((e) => e.event)).toEqual(['answer_cut', 'error']);
    expect(events.at(-2)!.data).toEqual({
      code: 'provider_unavailable',
      message: expect.any(String),
      model: 'openai-compatible/streamed-cut',
      partial: said,
      next: 'fail',
    });
    expect(events.at(-1)!.data).toMatchObject({ code: 'provider_unavailable' });
  });
});
