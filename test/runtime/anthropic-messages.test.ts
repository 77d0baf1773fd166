import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { type AnthropicBlock, anthropicError, anthropicStream, type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse } from '../helpers/sse.js';

/**
 * The edges of an Anthropic Messages answer (runtime/models/anthropic-messages.ts reads the stream
 * itself, not through the AI SDK's doStream): answers that are malformed, refused, cut, oversized or
 * oddly ordered end as the AI SDK's own reading ended them, except where said. A local server plays
 * each answer back.
 */

let t: TestApp;
let key: string;
let vendor: FakeProvider;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
const MODEL = 'anthropic/claude-sonnet-4-5';

beforeAll(async () => {
  vendor = await startFakeProvider();
  mcp = await startMcpServer();
  t = await startApp({ ANTHROPIC_BASE_URL: vendor.baseUrl, ANTHROPIC_API_KEY: 'sk-ant-test', MODEL_RETRY_BASE_MS: '1' });
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
  t.agent(key, { name: 'messages', appId: 'a', model: MODEL, systemPrompt: 'Be brief.', tools: [{ type: 'mcp', url: mcp.url }] });
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
const raw = (event: Record<string, unknown>): AnthropicBlock => ({ type: 'raw', event });
const answer = (blocks: AnthropicBlock[], extra: Partial<Parameters<typeof anthropicStream>[0]> = {}) => ({
  sse: anthropicStream({ id: 'msg_1', blocks, usage: { input_tokens: 12, output_tokens: 3 }, ...extra }),
});
const fine = answer([{ type: 'text', text: ['Fine.'] }]);

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
    const good = anthropicStream({
      id: 'msg_1',
      blocks: [{ type: 'text', text: ['Lost.'] }],
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    vendor.script({ sse: [good[0], frame('content_block_start', '{"type": "content_block_start", "index": '), ...good.slice(1)] }, fine);
    const { status, run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(status).toBe(200);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('an event of a known type in the wrong shape (a text delta that is not a string)', async () => {
    vendor.script(answer([raw({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 42 } })]), fine);
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('a stream whose body ends before message_stop', async () => {
    vendor.script(answer([{ type: 'text', text: ['Half an'] }], { end: false }), fine);
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.', finishReason: 'stop' });
  });

  it('an overloaded error as the first event fails the call as a 529, retried', async () => {
    vendor.script({ sse: [frame('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })] }, fine);
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('a 429 with Retry-After is retried; when every attempt gets one, the run says rate limited in the provider’s words', async () => {
    const limited = anthropicError(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', {
      'retry-after': '0',
    });
    vendor.script(limited, fine);
    expect((await run('hello')).run).toMatchObject({ status: 'completed', output: 'Fine.' });
    expect(vendor.requests).toHaveLength(2);

    vendor.script(limited, limited, limited);
    const { status, error } = await run('hello');
    expect(vendor.requests).toHaveLength(3);
    expect(status).toBe(502);
    expect(error).toMatchObject({ code: 'provider_rate_limited' });
    expect(error!.detail).toMatch(/^the run failed: Number of request tokens has exceeded your per-minute rate limit \(run [0-9a-f-]+\)$/);
  });

  it('a stream larger than 64 MiB is cut off and retried', async () => {
    const padding = `: ${'x'.repeat(1024 * 1024)}\n\n`;
    const huge = anthropicStream({
      id: 'msg_1',
      blocks: [{ type: 'text', text: ['never'] }],
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    vendor.script({ sse: [huge[0], ...Array.from({ length: 65 }, () => padding), ...huge.slice(1)] }, fine);
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(done).toMatchObject({ status: 'completed', output: 'Fine.' });
  });
});

describe('what the provider said is kept', () => {
  it('a 400 fails the run at once with the provider’s message', async () => {
    vendor.script(anthropicError(400, 'invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'));
    const { status, error } = await run('hello');
    expect(vendor.requests).toHaveLength(1);
    expect(status).toBe(502);
    expect(error).toMatchObject({ code: 'provider_bad_request' });
    expect(error!.detail).toMatch(/^the run failed: prompt is too long: 210000 tokens > 200000 maximum \(run [0-9a-f-]+\)$/);
  });

  it('an error event after the text ends the step with the provider’s words, the text kept', async () => {
    vendor.script(
      answer([{ type: 'text', text: ['Partly'] }, raw({ type: 'error', error: { type: 'api_error', message: 'Internal server error' } })], {
        end: false,
      }),
    );
    const events = await stream('hello');
    expect(vendor.requests).toHaveLength(1);
    expect(events.map((e) => e.event)).toEqual(['token', 'error']);
    expect(events[0].data).toEqual({ text: 'Partly' });
    expect(events[1].data).toMatchObject({ message: 'Internal server error' });
  });

  it('event and block types it does not know are passed over (the AI SDK failed the stream on them)', async () => {
    vendor.script(
      answer([
        raw({ type: 'message_annotation', note: 'new in some later API version' }),
        raw({ type: 'content_block_start', index: 0, content_block: { type: 'brand_new_block', payload: {} } }),
        raw({ type: 'content_block_delta', index: 0, delta: { type: 'brand_new_delta', value: 7 } }),
        raw({ type: 'content_block_stop', index: 0 }),
        { type: 'text', text: ['Still ', 'fine.'] },
      ]),
    );
    const { run: done } = await run('hello');
    expect(vendor.requests).toHaveLength(1);
    expect(done).toMatchObject({ status: 'completed', output: 'Still fine.' });
  });

  it('thinking stays out of the answer and goes back signed; usage counts cache reads and writes in', async () => {
    vendor.script(
      answer(
        [
          { type: 'thinking', thinking: ['The user wants ', 'a sum.'], signature: 'sig-1' },
          { type: 'tool_use', id: 'toolu_1', name: 'add', input: ['{"a":1,"b":2}'] },
        ],
        {
          stop_reason: 'tool_use',
          usage: { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 5, output_tokens: 20 },
        },
      ),
      answer([{ type: 'text', text: ['3'] }], { usage: { input_tokens: 30, output_tokens: 1 } }),
    );
    const { run: done } = await run('add 1 and 2');
    expect(done).toMatchObject({ status: 'completed', output: '3', tokenUsage: { inputTokens: 115 + 30, outputTokens: 21 } });
    expect(vendor.requests[1].body.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'The user wants a sum.', signature: 'sig-1' },
        { type: 'tool_use', id: 'toolu_1', name: 'add', input: { a: 1, b: 2 } },
      ],
    });
  });

  it('an answer cut at max_tokens finishes as `length`, with a warning, never as a clean stop', async () => {
    vendor.script(answer([{ type: 'text', text: ['The answer begins and'] }], { stop_reason: 'max_tokens' }));
    const { run: done } = await run('hello');
    expect(done).toMatchObject({ status: 'completed', finishReason: 'length', output: 'The answer begins and' });
    expect((await stored(done!.runId)).warnings).toContain('the answer was cut off at the output limit: it may be incomplete');
  });

  it('a refusal finishes as content-filter', async () => {
    vendor.script(answer([{ type: 'text', text: ['I can’t help with that.'] }], { stop_reason: 'refusal' }));
    const { run: done } = await run('hello');
    expect(done).toMatchObject({ status: 'completed', finishReason: 'content-filter', output: 'I can’t help with that.' });
  });
});

describe('tool calls as the Messages API streams them', () => {
  it('input split across many deltas is joined, the call run, and its result sent back by tool_use_id', async () => {
    vendor.script(
      answer([{ type: 'tool_use', id: 'toolu_split', name: 'add', input: ['', '{"a"', ': 2, "b', '": 3', '}'] }], {
        stop_reason: 'tool_use',
      }),
      answer([{ type: 'text', text: ['5'] }]),
    );
    const { run: done } = await run('add 2 and 3');
    expect(done).toMatchObject({ status: 'completed', output: '5' });
    expect((await stored(done!.runId)).toolCalls.map(({ id, name, input, result }) => ({ id, name, input, result }))).toEqual([
      { id: 'toolu_split', name: 'add', input: { a: 2, b: 3 }, result: { sum: 5 } },
    ]);
    expect(vendor.requests[1].body.messages.at(-1)).toMatchObject({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_split' }],
    });
    // Both calls carry the configured key and API version (the second with the headers made for the first).
    for (const request of vendor.requests) {
      expect(request.headers).toMatchObject({
        'x-api-key': 'sk-ant-test',
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
        'accept-encoding': 'identity',
      });
      expect(request.body).toMatchObject({ model: 'claude-sonnet-4-5', stream: true });
    }
  });

  it('a call with no input deltas runs with an empty object', async () => {
    vendor.script(
      answer([{ type: 'tool_use', id: 'toolu_empty', name: 'add', input: [] }], { stop_reason: 'tool_use' }),
      answer([{ type: 'text', text: ['done'] }]),
    );
    const { run: done } = await run('add nothing');
    expect(done).toMatchObject({ status: 'completed', output: 'done' });
    expect((await stored(done!.runId)).toolCalls.map(({ id, input }) => ({ id, input }))).toEqual([{ id: 'toolu_empty', input: {} }]);
  });
});
