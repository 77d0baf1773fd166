import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { type FakeProvider, openaiError, type ResponsesItem, responsesStream, startFakeProvider } from '../helpers/fake-provider.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse } from '../helpers/sse.js';

/**
 * The edges of an OpenAI Responses API answer (runtime/models/responses.ts reads the stream itself,
 * not through the AI SDK's doStream): answers that are malformed, refused, cut, oversized or oddly
 * ordered end as the AI SDK's own reading ended them, except where said. A local server plays each
 * answer back.
 */

let t: TestApp;
let key: string;
let vendor: FakeProvider;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
const MODEL = 'openai/gpt-5-mini';

beforeAll(async () => {
  vendor = await startFakeProvider();
  mcp = await startMcpServer();
  t = await startApp({ OPENAI_BASE_URL: vendor.baseUrl, OPENAI_API_KEY: 'sk-test', MODEL_RETRY_BASE_MS: '1' });
  ({ key } = await t.tenant());
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await mcp?.close();
  await vendor?.close();
});
afterEach(() => {
  expect(vendor.unused()).toBe(0);
});

const agent = () =>
  t.agent(key, { name: 'responses', appId: 'a', model: MODEL, systemPrompt: 'Be brief.', tools: [{ type: 'mcp', url: mcp.url }] });
const frame = (value: unknown) =>
  `event: ${(value as { type?: string }).type ?? 'x'}\ndata: ${typeof value === 'string' ? value : JSON.stringify(value)}\n\n`;
const message = (text: string[], id = 'msg_1'): ResponsesItem => ({ type: 'message', id, text });
const raw = (event: Record<string, unknown>): ResponsesItem => ({ type: 'raw', event });
const answer = (
  items: ResponsesItem[],
  extra: { usage?: Parameters<typeof responsesStream>[0]['usage']; incomplete?: string; end?: boolean } = {},
) => ({
  sse: responsesStream({ id: 'resp_1', items, usage: { input_tokens: 12, output_tokens: 3 }, ...extra }),
});
const fine = answer([message(['Fine.'])]);

async function run(text: string) {
  const a = await agent();
  const res = await execute(t, key, a.id, { message: text });
  return { status: res.response.status, run: res.data, error: res.error as { code?: string; detail?: string } | undefined };
}

async function stream(text: string) {
  const a = await agent();
  return readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: text } }));
}

/** The run as GET /api/v1/runs/:id answers it (its tool calls with their ids). */
const stored = async (runId: string) => (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;

describe('an answer the provider got wrong is retried, as any failed call', () => {
  it('an event that is not JSON, before any text', async () => {
    const good = responsesStream({ id: 'resp_1', items: [message(['Lost.'])] });
    vendor.script(
      { sse: [good[0], 'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", \n\n', ...good.slice(1)] },
      fine,
    );
    const { status, run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(status).toBe(200);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('an event of a known type in the wrong shape (a text delta that is not a string)', async () => {
    vendor.script(answer([raw({ type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, delta: 42 })]), fine);
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('a stream whose body ends before response.completed (the AI SDK would have finished it as `other`)', async () => {
    vendor.script(answer([message(['Half an'])], { end: false }), fine);
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.', finishReason: 'stop' });
  });

  it('an error event before any output fails the call with its status: a rate limit, retried', async () => {
    vendor.script(
      answer([raw({ type: 'error', code: 'rate_limit_exceeded', message: 'Rate limit reached for requests', param: null })]),
      fine,
    );
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('a 429 with Retry-After is retried; when every attempt gets one, the run says rate limited in the provider’s words', async () => {
    const limited = openaiError(429, 'Rate limit reached for gpt-5-mini', 'requests', 'rate_limit_exceeded', { 'retry-after': '0' });
    vendor.script(limited, fine);
    expect((await run('hello')).run).toMatchObject({ status: 'completed', output: 'Fine.' });
    expect(vendor.requests).toHaveLength(2);

    vendor.script(limited, limited, limited);
    const { status, error } = await run('hello');
    expect(vendor.requests).toHaveLength(3);
    expect(status).toBe(502);
    expect(error).toMatchObject({ code: 'provider_rate_limited' });
    expect(error!.detail).toMatch(/^the run failed: Rate limit reached for gpt-5-mini \(run [0-9a-f-]+\)$/);
  });

  it('a stream larger than 64 MiB is cut off and retried', async () => {
    const padding = `: ${'x'.repeat(1024 * 1024)}\n\n`;
    const huge = responsesStream({ id: 'resp_1', items: [message(['never'])] });
    vendor.script({ sse: [huge[0], ...Array.from({ length: 65 }, () => padding), ...huge.slice(1)] }, fine);
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.' });
  });
});

describe('what the provider said is kept', () => {
  it('a 400 fails the run at once with the provider’s message', async () => {
    vendor.script(openaiError(400, 'Invalid value for max_output_tokens.'));
    const { status, error } = await run('hello');
    expect(vendor.requests).toHaveLength(1);
    expect(status).toBe(502);
    expect(error).toMatchObject({ code: 'provider_bad_request' });
    expect(error!.detail).toMatch(/^the run failed: Invalid value for max_output_tokens\. \(run [0-9a-f-]+\)$/);
  });

  it('a failed response after the text ends the step with the provider’s words, the text kept', async () => {
    const failed = { id: 'resp_1', object: 'response', status: 'failed', error: { code: 'server_error', message: 'The model crashed.' } };
    vendor.script(answer([message(['Partly']), raw({ type: 'response.failed', response: failed })], { end: false }));
    const events = await stream('hello');
    expect(vendor.requests).toHaveLength(1);
    expect(events.map((e) => e.event)).toEqual(['token', 'error']);
    expect(events[0].data).toEqual({ text: 'Partly' });
    expect(events[1].data).toMatchObject({ message: 'The model crashed.' });
  });

  it('event types it does not know (new ones, hosted items, content parts) are passed over', async () => {
    vendor.script(
      answer([
        raw({ type: 'response.queued', response: { id: 'resp_1' } }),
        raw({ type: 'response.output_item.added', output_index: 0, item: { type: 'brand_new_item', id: 'x_1' } }),
        raw({ type: 'response.brand_new.delta', item_id: 'x_1', delta: 7 }),
        message(['Still ', 'fine.'], 'msg_2'),
      ]),
    );
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(1);
    expect(done).toMatchObject({ status: 'completed', output: 'Still fine.' });
  });

  it('events without an `event:` line (servers that only send data) are read by their type', async () => {
    const unnamed = responsesStream({ id: 'resp_1', items: [message(['Un', 'named.'])], usage: { input_tokens: 4, output_tokens: 2 } });
    vendor.script({ sse: unnamed.map((f) => f.replace(/^event: [^\n]*\n/, '')) });
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(1);
    expect(done).toMatchObject({
      status: 'completed',
      output: 'Unnamed.',
      finishReason: 'stop',
      tokenUsage: { inputTokens: 4, outputTokens: 2 },
    });
  });

  it('a reasoning summary stays out of the answer; usage counts cached and reasoning tokens in', async () => {
    vendor.script(
      answer(
        [{ type: 'reasoning', id: 'rs_1', encrypted_content: 'enc', summary: ['The user greets.', 'Answer briefly.'] }, message(['Hi.'])],
        {
          usage: { input_tokens: 1200, cached_tokens: 1024, output_tokens: 40, reasoning_tokens: 32 },
        },
      ),
    );
    const { run: done } = await run('hello');
    expect(done).toMatchObject({ status: 'completed', output: 'Hi.', tokenUsage: { inputTokens: 1200, outputTokens: 40 } });
  });

  it('an answer cut at max_output_tokens finishes as `length`, with a warning, never as a clean stop', async () => {
    vendor.script(answer([message(['The answer begins and'])], { incomplete: 'max_output_tokens' }));
    const { run: done } = await run('hello');
    expect(done).toMatchObject({ status: 'completed', finishReason: 'length', output: 'The answer begins and' });
    expect((await stored(done!.runId)).warnings).toContain('the answer was cut off at the output limit: it may be incomplete');
  });

  it('a refusal is the answer, its finish reason content-filter', async () => {
    vendor.script({
      sse: [
        ...responsesStream({ id: 'resp_1', items: [], end: false }),
        frame({
          type: 'response.output_item.added',
          output_index: 0,
          item: { type: 'message', id: 'msg_r', role: 'assistant', content: [] },
        }),
        frame({ type: 'response.refusal.delta', item_id: 'msg_r', output_index: 0, content_index: 0, delta: 'I cannot help with that.' }),
        frame({ type: 'response.refusal.done', item_id: 'msg_r', output_index: 0, content_index: 0, refusal: 'I cannot help with that.' }),
        frame({
          type: 'response.output_item.done',
          output_index: 0,
          item: { type: 'message', id: 'msg_r', role: 'assistant', content: [] },
        }),
        frame({
          type: 'response.completed',
          response: { id: 'resp_1', incomplete_details: null, usage: { input_tokens: 5, output_tokens: 6 } },
        }),
      ],
    });
    const { run: done } = await run('hello');
    expect(done).toMatchObject({ status: 'completed', finishReason: 'content-filter', output: 'I cannot help with that.' });
  });
});

describe('tool calls as the Responses API streams them', () => {
  it('arguments split across many deltas are joined, the call run, and its output sent back by call_id', async () => {
    vendor.script(
      answer([{ type: 'function_call', id: 'fc_1', call_id: 'call_split', name: 'add', arguments: ['{"a"', ': 2, "b', '": 3', '}'] }]),
      answer([message(['5'])]),
    );
    const { run: done } = await run('add 2 and 3');
    expect(done).toMatchObject({ status: 'completed', output: '5' });
    expect((await stored(done!.runId)).toolCalls.map(({ id, name, input, result }) => ({ id, name, input, result }))).toEqual([
      { id: 'call_split', name: 'add', input: { a: 2, b: 3 }, result: { sum: 5 } },
    ]);
    expect(vendor.requests[1].body.input.at(-1)).toEqual({ type: 'function_call_output', call_id: 'call_split', output: '{"sum":5}' });
    // Both calls carry the configured key (the second with the headers made for the first).
    for (const request of vendor.requests) {
      expect(request.headers).toMatchObject({
        authorization: 'Bearer sk-test',
        'content-type': 'application/json',
        'accept-encoding': 'identity',
      });
      expect(request.body).toMatchObject({ model: 'gpt-5-mini', stream: true });
    }
    expect(vendor.requests[1].body.input.at(-2)).toEqual({
      type: 'function_call',
      call_id: 'call_split',
      name: 'add',
      arguments: '{"a":2,"b":3}',
    });
  });
});
