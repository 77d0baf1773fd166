import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import {
  anthropicError,
  anthropicStream,
  chatStream,
  openaiError,
  responsesStream,
  startFakeProvider,
  type FakeProvider,
} from '../helpers/fake-provider.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse, type SseEvent } from '../helpers/sse.js';

/**
 * What the tool loop must carry from one model step to the next, pinned with the REAL provider
 * packages (@ai-sdk/openai Responses API, @ai-sdk/anthropic Messages API, @ai-sdk/openai-compatible
 * chat completions) against a local server that plays back hand-written streams in each vendor's wire
 * format. The assertions are on the exact requests the vendor received for the step after a tool call
 * (reasoning items, thinking signatures, call ids, tool results), and on what the run stored and
 * streamed. They describe the loop as it is today (AI SDK streamText); a step driver that replaces it
 * must keep them green, or change them knowingly.
 */

let t: TestApp;
let key: string;
let vendor: FakeProvider;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

const PRICES = {
  'openai/gpt-5-mini': { input: 0.25, output: 2 },
  'anthropic/claude-sonnet-4-5': { input: 3, output: 15 },
  'openai-compatible/qwen3-8b': { input: 0.1, output: 0.3 },
};
const cost = (model: keyof typeof PRICES, input: number, output: number) =>
  (input * PRICES[model].input + output * PRICES[model].output) / 1e6;

beforeAll(async () => {
  vendor = await startFakeProvider();
  mcp = await startMcpServer();
  t = await startApp({
    OPENAI_BASE_URL: vendor.baseUrl,
    OPENAI_API_KEY: 'sk-test-openai',
    ANTHROPIC_BASE_URL: vendor.baseUrl,
    ANTHROPIC_API_KEY: 'sk-ant-test',
    OPENAI_COMPATIBLE_BASE_URL: vendor.baseUrl,
    OPENAI_COMPATIBLE_API_KEY: 'local-secret',
    MODEL_PRICES: JSON.stringify(PRICES),
  });
  ({ key } = await t.tenant());
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await mcp?.close();
  await vendor?.close();
});
afterEach(() => {
  // Every scripted answer was asked for: no step went missing.
  expect(vendor.unused()).toBe(0);
});

/** A fresh agent (so its run list holds just this test's run) with the MCP test tools add, shout, slow, broken. */
/** A step's clock fields (issue 27's run insight): present and ordered; their values are the machine's. */
const timed = {
  startedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
  completedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
  durationMs: expect.any(Number),
};

const agent = (model: string) =>
  t.agent(key, { name: 'roundtrip', appId: 'a', model, systemPrompt: 'Be brief.', tools: [{ type: 'mcp', url: mcp.url }] });

/** Runs the agent over SSE; answers the events and the stored run (GET /api/v1/runs/:id). */
async function stream(model: string, message: string, extra: Record<string, unknown> = {}) {
  const a = await agent(model);
  const events = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message, ...extra } }));
  const runs = (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: a.id } } })).data!.runs;
  expect(runs).toHaveLength(1);
  const run = await getRun(runs[0].id);
  return { events, run, agentId: a.id };
}

/** The run as GET /api/v1/runs/:id answers it. */
const getRun = async (runId: string) => (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;

/** Tool call records without their timestamps. */
const calls = (run: { toolCalls: { id: string; name: string; input: unknown; result: unknown }[] }) =>
  run.toolCalls.map(({ id, name, input, result }) => ({ id, name, input, result }));
/** The events without ids, `done` without its run and conversation ids. */
const brief = (events: SseEvent[]) =>
  events.map((e) =>
    e.event === 'done' ? { event: 'done', cost: e.data.cost, tokenUsage: e.data.tokenUsage } : { event: e.event, data: e.data },
  );
const TOOL_NAMES = ['add', 'shout', 'slow', 'broken'];

// ====================================================================== 1. OpenAI Responses API

describe('OpenAI Responses API (openai/gpt-5-mini → POST /v1/responses)', () => {
  it('sends the reasoning item back by reference, then the function call and its output', async () => {
    const calledBefore = mcp.state.calls.length;
    vendor.script(
      {
        sse: responsesStream({
          id: 'resp_01',
          items: [
            {
              type: 'reasoning',
              id: 'rs_01',
              encrypted_content: 'gAAAAABo-ENCRYPTED-REASONING-01',
              summary: ['Two numbers to add; use the add tool.'],
            },
            { type: 'message', id: 'msg_01', text: ['Adding', ' them.'] },
            { type: 'function_call', id: 'fc_01', call_id: 'call_add_01', name: 'add', arguments: ['{"a":2,', '"b":3}'] },
          ],
          usage: { input_tokens: 120, output_tokens: 40, reasoning_tokens: 24 },
        }),
      },
      {
        sse: responsesStream({
          id: 'resp_02',
          items: [{ type: 'message', id: 'msg_02', text: ['The sum', ' is 5.'] }],
          usage: { input_tokens: 180, output_tokens: 7 },
        }),
      },
    );
    const { events, run } = await stream('openai/gpt-5-mini', 'add 2 and 3');

    expect(vendor.requests.map((r) => [r.method, r.url, r.headers.authorization])).toEqual([
      ['POST', '/v1/responses', 'Bearer sk-test-openai'],
      ['POST', '/v1/responses', 'Bearer sk-test-openai'],
    ]);
    const [first, second] = vendor.requests.map((r) => r.body);
    const prompt = [
      // gpt-5 is a reasoning model: the system prompt goes as a developer message.
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'input_text', text: 'add 2 and 3' }] },
    ];
    expect(first.input).toEqual(prompt);
    expect(first.tools.map((x: { name: string }) => x.name)).toEqual(TOOL_NAMES);
    expect(first).toMatchObject({ model: 'gpt-5-mini', stream: true, tool_choice: 'auto' });

    // The step after the tool call. `store` is not sent (the API's default, true, applies), so the
    // SDK refers to the stored reasoning item and the stored message by id instead of resending them:
    // the encrypted content is NOT sent back. The function call goes in full (call_id, name, the
    // arguments string), then our tool's JSON result as the function_call_output.
    expect(second.input).toEqual([
      ...prompt,
      { type: 'item_reference', id: 'rs_01' },
      { type: 'item_reference', id: 'msg_01' },
      { type: 'function_call', call_id: 'call_add_01', name: 'add', arguments: '{"a":2,"b":3}' },
      { type: 'function_call_output', call_id: 'call_add_01', output: '{"sum":5}' },
    ]);
    expect(JSON.stringify(second)).not.toContain('ENCRYPTED-REASONING');
    expect(second).toMatchObject({ model: 'gpt-5-mini', stream: true, tool_choice: 'auto' });
    for (const absent of ['store', 'include', 'previous_response_id', 'reasoning', 'temperature'])
      expect(second).not.toHaveProperty(absent);
    expect(second.tools).toEqual(first.tools);

    expect(mcp.state.calls.slice(calledBefore)).toEqual([{ name: 'add', args: { a: 2, b: 3 } }]);
    // Reasoning is not streamed to the client; the preamble text of step 1 is.
    expect(brief(events)).toEqual([
      { event: 'token', data: { text: 'Adding' } },
      { event: 'token', data: { text: ' them.' } },
      { event: 'tool_call_start', data: { id: 'call_add_01', name: 'add', input: { a: 2, b: 3 } } },
      { event: 'tool_call_end', data: { id: 'call_add_01', result: { sum: 5 } } },
      { event: 'token', data: { text: 'The sum' } },
      { event: 'token', data: { text: ' is 5.' } },
      { event: 'done', cost: cost('openai/gpt-5-mini', 300, 47), tokenUsage: { inputTokens: 300, outputTokens: 47 } },
    ]);
    expect(run).toMatchObject({
      status: 'completed',
      error: null,
      output: 'Adding them.The sum is 5.',
      tokenUsage: { inputTokens: 300, outputTokens: 47 },
    });
    expect(run.cost).toBeCloseTo(cost('openai/gpt-5-mini', 300, 47), 12);
    expect(calls(run)).toEqual([{ id: 'call_add_01', name: 'add', input: { a: 2, b: 3 }, result: { sum: 5 } }]);
    expect(run.steps).toEqual([
      {
        index: 0,
        text: 'Adding them.',
        toolCallIds: ['call_add_01'],
        injected: [],
        finishReason: 'tool-calls',
        usage: { inputTokens: 120, outputTokens: 40 },
        model: 'openai/gpt-5-mini',
        cost: cost('openai/gpt-5-mini', 120, 40),
        ...timed,
      },
      {
        index: 1,
        text: 'The sum is 5.',
        toolCallIds: [],
        injected: [],
        finishReason: 'stop',
        usage: { inputTokens: 180, outputTokens: 7 },
        model: 'openai/gpt-5-mini',
        cost: cost('openai/gpt-5-mini', 180, 7),
        ...timed,
      },
    ]);
  });
});

// ====================================================================== 2. Anthropic Messages API

describe('Anthropic Messages API (anthropic/claude-sonnet-4-5 → POST /v1/messages)', () => {
  it('sends the thinking block back with its signature, before the tool_use, and the tool_result after', async () => {
    vendor.script(
      {
        sse: anthropicStream({
          id: 'msg_01',
          blocks: [
            { type: 'thinking', thinking: ['The user wants 2 + 3.', ' I will call add.'], signature: 'EqQBCkYIBxgCKkBsignature01==' },
            { type: 'tool_use', id: 'toolu_01', name: 'add', input: ['{"a": 2', ', "b": 3}'] },
          ],
          stop_reason: 'tool_use',
          usage: { input_tokens: 410, output_tokens: 96 },
        }),
      },
      {
        sse: anthropicStream({
          id: 'msg_02',
          blocks: [{ type: 'text', text: ['It is', ' 5.'] }],
          usage: { input_tokens: 530, output_tokens: 6 },
        }),
      },
    );
    const { events, run } = await stream('anthropic/claude-sonnet-4-5', 'add 2 and 3');

    expect(vendor.requests.map((r) => [r.url, r.headers['x-api-key'], r.headers['anthropic-version']])).toEqual([
      ['/v1/messages', 'sk-ant-test', '2023-06-01'],
      ['/v1/messages', 'sk-ant-test', '2023-06-01'],
    ]);
    const [first, second] = vendor.requests.map((r) => r.body);
    const user = { role: 'user', content: [{ type: 'text', text: 'add 2 and 3' }] };
    expect(first.messages).toEqual([user]);
    expect(first.tools.map((x: { name: string }) => x.name)).toEqual(TOOL_NAMES);

    expect(second).toMatchObject({ model: 'claude-sonnet-4-5', stream: true, system: [{ type: 'text', text: 'Be brief.' }] });
    expect(second.messages).toEqual([
      user,
      {
        role: 'assistant',
        content: [
          // The whole thinking text (its deltas joined) with the signature from signature_delta.
          { type: 'thinking', thinking: 'The user wants 2 + 3. I will call add.', signature: 'EqQBCkYIBxgCKkBsignature01==' },
          { type: 'tool_use', id: 'toolu_01', name: 'add', input: { a: 2, b: 3 } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: '{"sum":5}' }] },
    ]);
    expect(second.tools).toEqual(first.tools);

    expect(brief(events)).toEqual([
      { event: 'tool_call_start', data: { id: 'toolu_01', name: 'add', input: { a: 2, b: 3 } } },
      { event: 'tool_call_end', data: { id: 'toolu_01', result: { sum: 5 } } },
      { event: 'token', data: { text: 'It is' } },
      { event: 'token', data: { text: ' 5.' } },
      { event: 'done', cost: cost('anthropic/claude-sonnet-4-5', 940, 102), tokenUsage: { inputTokens: 940, outputTokens: 102 } },
    ]);
    expect(run).toMatchObject({ status: 'completed', output: 'It is 5.', tokenUsage: { inputTokens: 940, outputTokens: 102 } });
    expect(calls(run)).toEqual([{ id: 'toolu_01', name: 'add', input: { a: 2, b: 3 }, result: { sum: 5 } }]);
    expect(run.steps.map((s) => [s.finishReason, s.usage])).toEqual([
      ['tool-calls', { inputTokens: 410, outputTokens: 96 }],
      ['stop', { inputTokens: 530, outputTokens: 6 }],
    ]);
  });

  it('sends redacted_thinking blocks back with their data, in order among thinking, text and tool_use', async () => {
    vendor.script(
      {
        sse: anthropicStream({
          id: 'msg_01',
          blocks: [
            { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
            { type: 'thinking', thinking: ['Shout it.'], signature: 'ErUBCkYIBsignature02==' },
            { type: 'text', text: ['On it.'] },
            { type: 'tool_use', id: 'toolu_02', name: 'shout', input: ['{"text": "hi"}'] },
          ],
          stop_reason: 'tool_use',
          usage: { input_tokens: 300, output_tokens: 50 },
        }),
      },
      { sse: anthropicStream({ id: 'msg_02', blocks: [{ type: 'text', text: ['HI'] }], usage: { input_tokens: 400, output_tokens: 2 } }) },
    );
    const { events, run } = await stream('anthropic/claude-sonnet-4-5', 'shout hi');

    expect(vendor.requests[1].body.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
          { type: 'thinking', thinking: 'Shout it.', signature: 'ErUBCkYIBsignature02==' },
          { type: 'text', text: 'On it.' },
          { type: 'tool_use', id: 'toolu_02', name: 'shout', input: { text: 'hi' } },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_02', content: '{"content":[{"type":"text","text":"HI"}],"text":"HI"}' }],
      },
    ]);
    expect(events.filter((e) => e.event === 'token').map((e) => e.data.text)).toEqual(['On it.', 'HI']);
    // Step texts are joined with nothing in between.
    expect(run).toMatchObject({ status: 'completed', output: 'On it.HI', tokenUsage: { inputTokens: 700, outputTokens: 52 } });
    expect(calls(run)).toEqual([
      { id: 'toolu_02', name: 'shout', input: { text: 'hi' }, result: { content: [{ type: 'text', text: 'HI' }], text: 'HI' } },
    ]);
  });
});

// ====================================================================== 3. OpenAI-compatible chat completions

describe('OpenAI-compatible chat completions (openai-compatible/qwen3-8b → POST /v1/chat/completions)', () => {
  it('runs two parallel tool calls of one step concurrently and sends both results back by tool_call_id, in call order', async () => {
    vendor.script(
      {
        sse: chatStream({
          toolCalls: [
            // The first call takes longer, so its result is ready second.
            { id: 'call_slow_a', name: 'slow', arguments: ['{"ms":', '300}'] },
            { id: 'call_slow_b', name: 'slow', arguments: ['{"ms":20}'] },
          ],
          finish: 'tool_calls',
          usage: { prompt_tokens: 200, completion_tokens: 30 },
        }),
      },
      // prompt_tokens includes the cached ones; the run counts prompt_tokens.
      {
        sse: chatStream({
          text: ['Both', ' done.'],
          finish: 'stop',
          usage: { prompt_tokens: 260, completion_tokens: 3, cached_tokens: 192 },
        }),
      },
    );
    const { events, run } = await stream('openai-compatible/qwen3-8b', 'wait twice');

    expect(vendor.requests.map((r) => [r.url, r.headers.authorization])).toEqual([
      ['/v1/chat/completions', 'Bearer local-secret'],
      ['/v1/chat/completions', 'Bearer local-secret'],
    ]);
    const [first, second] = vendor.requests.map((r) => r.body);
    const prompt = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'wait twice' },
    ];
    expect(first.messages).toEqual(prompt);
    expect(second).toMatchObject({ model: 'qwen3-8b', stream: true, stream_options: { include_usage: true } });
    expect(second.messages).toEqual([
      ...prompt,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_slow_a', type: 'function', function: { name: 'slow', arguments: '{"ms":300}' } },
          { id: 'call_slow_b', type: 'function', function: { name: 'slow', arguments: '{"ms":20}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_slow_a', content: '{"content":[{"type":"text","text":"waited 300"}],"text":"waited 300"}' },
      { role: 'tool', tool_call_id: 'call_slow_b', content: '{"content":[{"type":"text","text":"waited 20"}],"text":"waited 20"}' },
    ]);

    // Both started before either ended; b (20 ms) ends first.
    expect(brief(events)).toEqual([
      { event: 'tool_call_start', data: { id: 'call_slow_a', name: 'slow', input: { ms: 300 } } },
      { event: 'tool_call_start', data: { id: 'call_slow_b', name: 'slow', input: { ms: 20 } } },
      {
        event: 'tool_call_end',
        data: { id: 'call_slow_b', result: { content: [{ type: 'text', text: 'waited 20' }], text: 'waited 20' } },
      },
      {
        event: 'tool_call_end',
        data: { id: 'call_slow_a', result: { content: [{ type: 'text', text: 'waited 300' }], text: 'waited 300' } },
      },
      { event: 'token', data: { text: 'Both' } },
      { event: 'token', data: { text: ' done.' } },
      { event: 'done', cost: cost('openai-compatible/qwen3-8b', 460, 33), tokenUsage: { inputTokens: 460, outputTokens: 33 } },
    ]);
    const [a, b] = run.toolCalls;
    expect([a.id, b.id]).toEqual(['call_slow_a', 'call_slow_b']);
    expect(Date.parse(b.startedAt)).toBeLessThan(Date.parse(a.completedAt!));
    expect(run).toMatchObject({ status: 'completed', output: 'Both done.', tokenUsage: { inputTokens: 460, outputTokens: 33 } });
    expect(run.steps.map((s) => [s.toolCallIds, s.finishReason])).toEqual([
      [['call_slow_a', 'call_slow_b'], 'tool-calls'],
      [[], 'stop'],
    ]);
  });
});

// ====================================================================== 4. Provider errors

describe('provider errors', () => {
  const serverError = (message: string) => openaiError(500, message, 'server_error', null, { 'retry-after-ms': '10' });
  const answer = {
    sse: responsesStream({
      id: 'resp_ok',
      items: [{ type: 'message', id: 'msg_ok', text: ['Fine.'] }],
      usage: { input_tokens: 9, output_tokens: 2 },
    }),
  };

  it('retries a 500 and completes', async () => {
    // retry-after-ms (as OpenAI sends it) sets the wait before the retry.
    vendor.script(serverError('The server had an error while processing your request.'), answer);
    const { events, run } = await stream('openai/gpt-5-mini', 'hello');
    expect(vendor.requests).toHaveLength(2);
    expect(vendor.requests[1].body).toEqual(vendor.requests[0].body);
    expect(brief(events)).toEqual([
      { event: 'token', data: { text: 'Fine.' } },
      { event: 'done', cost: cost('openai/gpt-5-mini', 9, 2), tokenUsage: { inputTokens: 9, outputTokens: 2 } },
    ]);
    expect(run).toMatchObject({ status: 'completed', output: 'Fine.', error: null });
  });

  it('fails the run with provider_unavailable after the third 500 (MODEL_RETRY_MAX_ATTEMPTS 3)', async () => {
    vendor.script(serverError('first failure'), serverError('second failure'), serverError('third failure'));
    const { events, run } = await stream('openai/gpt-5-mini', 'hello');
    expect(vendor.requests).toHaveLength(3);
    const error = { code: 'provider_unavailable', message: 'third failure' };
    expect(brief(events)).toEqual([{ event: 'error', data: error }]);
    expect(run).toMatchObject({ status: 'failed', output: '', error, tokenUsage: { inputTokens: 0, outputTokens: 0 }, toolCalls: [] });
  });

  it('fails the run at once on a 400, with the provider’s message', async () => {
    const message = 'max_tokens: 999999 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5';
    vendor.script(anthropicError(400, 'invalid_request_error', message));
    const a = await agent('anthropic/claude-sonnet-4-5');
    const res = await execute(t.api(key), a.id, { message: 'hello' });
    expect(vendor.requests).toHaveLength(1);
    expect(res.response.status).toBe(502);
    expect(res.error).toMatchObject({ status: 502, code: 'provider_bad_request' });
    const runId = /\(run ([0-9a-f-]+)\)$/.exec(res.error!.detail)![1];
    expect(res.error!.detail).toBe(`the run failed: ${message} (run ${runId})`);
    const run = await getRun(runId);
    expect(run).toMatchObject({ status: 'failed', output: '', error: { code: 'provider_bad_request', message }, toolCalls: [] });
  });

  it('keeps the output, tool calls and usage of earlier steps when the stream errors mid-way', async () => {
    vendor.script(
      {
        sse: anthropicStream({
          id: 'msg_01',
          blocks: [{ type: 'tool_use', id: 'toolu_01', name: 'add', input: ['{"a":1,"b":1}'] }],
          stop_reason: 'tool_use',
          usage: { input_tokens: 100, output_tokens: 20 },
        }),
      },
      {
        sse: anthropicStream({
          id: 'msg_02',
          blocks: [
            { type: 'text', text: ['The answer', ' is'] },
            { type: 'raw', event: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
          ],
          usage: { input_tokens: 150, output_tokens: 0 },
          end: false,
        }),
      },
    );
    const { events, run } = await stream('anthropic/claude-sonnet-4-5', 'one plus one');
    // The provider hands the loop the error event's plain object ({ type, message }): its message is
    // kept, its type classified; after output the step is not retried.
    const error = { code: 'provider_unavailable', message: 'Overloaded' };
    expect(brief(events)).toEqual([
      { event: 'tool_call_start', data: { id: 'toolu_01', name: 'add', input: { a: 1, b: 1 } } },
      { event: 'tool_call_end', data: { id: 'toolu_01', result: { sum: 2 } } },
      { event: 'token', data: { text: 'The answer' } },
      { event: 'token', data: { text: ' is' } },
      // The stream names the cut and what was said before it, then fails (docs/runtime.md, "Cut answers").
      {
        event: 'answer_cut',
        data: { ...error, model: 'anthropic/claude-sonnet-4-5', partial: 'The answer is', next: 'fail' },
      },
      { event: 'error', data: error },
    ]);
    expect(run).toMatchObject({ status: 'failed', error, output: 'The answer is', tokenUsage: { inputTokens: 100, outputTokens: 20 } });
    expect(run.cost).toBeCloseTo(cost('anthropic/claude-sonnet-4-5', 100, 20), 12);
    expect(calls(run)).toEqual([{ id: 'toolu_01', name: 'add', input: { a: 1, b: 1 }, result: { sum: 2 } }]);
    expect(run.steps.map((s) => [s.text, s.finishReason, s.usage])).toEqual([
      ['', 'tool-calls', { inputTokens: 100, outputTokens: 20 }],
      ['The answer is', 'error', { inputTokens: 0, outputTokens: 0 }],
    ]);
  });

  it('handles an error event after output the same way on the OpenAI and chat-completions streams', async () => {
    vendor.script({
      sse: responsesStream({
        id: 'resp_01',
        items: [
          { type: 'message', id: 'msg_01', text: ['Part'] },
          { type: 'raw', event: { type: 'error', code: 'server_error', message: 'The model produced invalid content.', param: null } },
        ],
        end: false,
      }),
    });
    const openai = await stream('openai/gpt-5-mini', 'hello');
    // The OpenAI provider's stream error is a plain object too; its message is kept.
    const openaiError = { code: 'model_error', message: 'The model produced invalid content.' };
    expect(brief(openai.events)).toEqual([
      { event: 'token', data: { text: 'Part' } },
      { event: 'error', data: openaiError },
    ]);
    expect(openai.run).toMatchObject({ status: 'failed', output: 'Part', error: openaiError });

    const frames = chatStream({ text: ['Part'], finish: 'stop', usage: { prompt_tokens: 1, completion_tokens: 1 } });
    vendor.script({
      sse: [
        ...frames.slice(0, 2),
        `data: ${JSON.stringify({ error: { message: 'CUDA out of memory', type: 'server_error', code: 500 } })}\n\n`,
      ],
    });
    const local = await stream('openai-compatible/qwen3-8b', 'hello');
    const localError = { code: 'model_error', message: 'CUDA out of memory' };
    expect(brief(local.events)).toEqual([
      { event: 'token', data: { text: 'Part' } },
      { event: 'error', data: localError },
    ]);
    expect(local.run).toMatchObject({ status: 'failed', output: 'Part', error: localError });
  });
});

// ====================================================================== 5. Usage and finish reasons

describe('token usage and finish reasons', () => {
  it('ends a run cut by max_output_tokens (OpenAI response.incomplete) as completed with what was produced', async () => {
    vendor.script({
      sse: responsesStream({
        id: 'resp_01',
        items: [
          { type: 'reasoning', id: 'rs_01', encrypted_content: 'gAAAAB-enc' },
          { type: 'message', id: 'msg_01', text: ['Once upon', ' a'] },
        ],
        usage: { input_tokens: 1200, cached_tokens: 1024, output_tokens: 64, reasoning_tokens: 60 },
        incomplete: 'max_output_tokens',
      }),
    });
    const { events, run } = await stream('openai/gpt-5-mini', 'tell a story', { maxTokens: 64 });
    expect(vendor.requests).toHaveLength(1);
    expect(vendor.requests[0].body.max_output_tokens).toBe(64);
    // input_tokens include the cached ones and output_tokens the reasoning ones; the run counts both
    // totals, with no split (and the cost prices cached input at the full input price).
    const tokenUsage = { inputTokens: 1200, outputTokens: 64 };
    expect(brief(events)).toEqual([
      { event: 'token', data: { text: 'Once upon' } },
      { event: 'token', data: { text: ' a' } },
      { event: 'done', cost: cost('openai/gpt-5-mini', 1200, 64), tokenUsage },
    ]);
    // Completed with what was produced, but never silently: its finishReason and a warning say it was cut.
    expect(run).toMatchObject({
      status: 'completed',
      error: null,
      output: 'Once upon a',
      tokenUsage,
      finishReason: 'length',
      warnings: ['the answer was cut off at the output limit of 64 tokens: it may be incomplete'],
    });
    expect(run.steps).toEqual([
      {
        index: 0,
        text: 'Once upon a',
        toolCallIds: [],
        injected: [],
        finishReason: 'length',
        usage: tokenUsage,
        model: 'openai/gpt-5-mini',
        cost: cost('openai/gpt-5-mini', 1200, 64),
        ...timed,
      },
    ]);
  });

  it('ends a run cut by max_tokens (Anthropic) the same way; cache reads and writes count as input', async () => {
    vendor.script({
      sse: anthropicStream({
        id: 'msg_01',
        blocks: [{ type: 'text', text: ['Once', ' upon'] }],
        stop_reason: 'max_tokens',
        usage: { input_tokens: 30, cache_read_input_tokens: 2000, cache_creation_input_tokens: 500, output_tokens: 2 },
      }),
    });
    const { events, run } = await stream('anthropic/claude-sonnet-4-5', 'tell a story', { maxTokens: 2 });
    expect(vendor.requests[0].body.max_tokens).toBe(2);
    // input_tokens + cache_read_input_tokens + cache_creation_input_tokens, all at the input price.
    const tokenUsage = { inputTokens: 2530, outputTokens: 2 };
    expect(events.at(-1)!.data).toMatchObject({ tokenUsage });
    expect(events.at(-1)!.data.cost).toBeCloseTo(cost('anthropic/claude-sonnet-4-5', 2530, 2), 12);
    expect(run).toMatchObject({ status: 'completed', output: 'Once upon', tokenUsage });
    expect(run.steps.map((s) => s.finishReason)).toEqual(['length']);
  });

  it('does not run the tool calls of a step cut by length, and asks for no further step', async () => {
    vendor.script({
      sse: chatStream({
        text: ['Let me'],
        toolCalls: [{ id: 'call_1', name: 'add', arguments: ['{"a":1,"b":2}'] }],
        finish: 'length',
        usage: { prompt_tokens: 40, completion_tokens: 8 },
      }),
    });
    const calledBefore = mcp.state.calls.length;
    const { events, run } = await stream('openai-compatible/qwen3-8b', 'add', { maxTokens: 8 });
    // The AI SDK runs tools only after the step ends, and only for finish reasons stop and tool-calls.
    expect(vendor.requests).toHaveLength(1);
    expect(mcp.state.calls.length).toBe(calledBefore);
    expect(events.map((e) => e.event)).toEqual(['token', 'done']);
    expect(run).toMatchObject({ status: 'completed', output: 'Let me', tokenUsage: { inputTokens: 40, outputTokens: 8 }, toolCalls: [] });
    // The step lists only calls that ran (none here), so every id has its tool call record.
    expect(run.steps.map((s) => [s.toolCallIds, s.finishReason])).toEqual([[[], 'length']]);
  });

  it('runs the tool calls of a step that finishes with stop and gives the model their results (servers that say stop after tool calls)', async () => {
    vendor.script(
      {
        sse: chatStream({
          toolCalls: [{ id: 'call_1', name: 'add', arguments: ['{"a":1,"b":2}'] }],
          finish: 'stop',
          usage: { prompt_tokens: 40, completion_tokens: 8 },
        }),
      },
      { sse: chatStream({ text: ['It is 3.'], finish: 'stop', usage: { prompt_tokens: 60, completion_tokens: 4 } }) },
    );
    const { events, run } = await stream('openai-compatible/qwen3-8b', 'add');
    // Whatever the finish reason says, a step that called tools is followed by one that reads their results.
    expect(vendor.requests).toHaveLength(2);
    expect(vendor.requests[1].body.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":2}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"sum":3}' },
    ]);
    expect(events.map((e) => e.event)).toEqual(['tool_call_start', 'tool_call_end', 'token', 'done']);
    expect(run).toMatchObject({ status: 'completed', output: 'It is 3.', tokenUsage: { inputTokens: 100, outputTokens: 12 } });
    expect(calls(run)).toEqual([{ id: 'call_1', name: 'add', input: { a: 1, b: 2 }, result: { sum: 3 } }]);
    expect(run.steps.map((s) => s.finishReason)).toEqual(['stop', 'stop']);
  });
});

// ====================================================================== 6. Tool input the model got wrong

describe('tool calls the model got wrong', () => {
  const answer = (id: string) => ({
    sse: responsesStream({
      id,
      items: [{ type: 'message', id: `msg_${id}`, text: ['Sorry.'] }],
      usage: { input_tokens: 50, output_tokens: 2 },
    }),
  });

  it('records a call to an unknown tool as invalid_tool_call and sends the SDK’s error text as its output (OpenAI)', async () => {
    vendor.script(
      {
        sse: responsesStream({
          id: 'resp_01',
          items: [{ type: 'function_call', id: 'fc_01', call_id: 'call_mul', name: 'multiply', arguments: ['{"a":2,"b":3}'] }],
          usage: { input_tokens: 40, output_tokens: 9 },
        }),
      },
      answer('resp_02'),
    );
    const { events, run } = await stream('openai/gpt-5-mini', 'multiply 2 by 3');
    const message = "Model tried to call unavailable tool 'multiply'. Available tools: add, shout, slow, broken.";
    const result = { error: { code: 'invalid_tool_call', message } };
    // What the model reads is the plain error text, not the { error } object the run records.
    expect(vendor.requests[1].body.input.slice(2)).toEqual([
      { type: 'function_call', call_id: 'call_mul', name: 'multiply', arguments: '{"a":2,"b":3}' },
      { type: 'function_call_output', call_id: 'call_mul', output: message },
    ]);
    expect(brief(events).slice(0, 2)).toEqual([
      { event: 'tool_call_start', data: { id: 'call_mul', name: 'multiply', input: { a: 2, b: 3 } } },
      { event: 'tool_call_end', data: { id: 'call_mul', result } },
    ]);
    expect(run).toMatchObject({ status: 'completed', output: 'Sorry.', tokenUsage: { inputTokens: 90, outputTokens: 11 } });
    expect(calls(run)).toEqual([{ id: 'call_mul', name: 'multiply', input: { a: 2, b: 3 }, result }]);
    expect(run.steps.map((s) => s.toolCallIds)).toEqual([['call_mul'], []]);
  });

  it('records a call with arguments that are not JSON as invalid_tool_call, without running the tool (chat completions)', async () => {
    const calledBefore = mcp.state.calls.length;
    vendor.script(
      {
        sse: chatStream({
          toolCalls: [{ id: 'call_bad', name: 'add', arguments: ['{"a":1,', '"b":'] }],
          finish: 'tool_calls',
          usage: { prompt_tokens: 30, completion_tokens: 6 },
        }),
      },
      { sse: chatStream({ text: ['Sorry.'], finish: 'stop', usage: { prompt_tokens: 60, completion_tokens: 2 } }) },
    );
    const { events, run } = await stream('openai-compatible/qwen3-8b', 'add 1 and 2');
    const message = 'Invalid input for tool add: JSON parsing failed: Text: {"a":1,"b":.\nError message: Unexpected end of JSON input';
    const result = { error: { code: 'invalid_tool_call', message } };
    expect(mcp.state.calls.length).toBe(calledBefore);
    // The model's broken arguments are replaced by "{}" in the replayed call; the result is the error text.
    expect(vendor.requests[1].body.messages.slice(2)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_bad', type: 'function', function: { name: 'add', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_bad', content: message },
    ]);
    // The record keeps the raw arguments string as the input.
    expect(brief(events).slice(0, 2)).toEqual([
      { event: 'tool_call_start', data: { id: 'call_bad', name: 'add', input: '{"a":1,"b":' } },
      { event: 'tool_call_end', data: { id: 'call_bad', result } },
    ]);
    expect(calls(run)).toEqual([{ id: 'call_bad', name: 'add', input: '{"a":1,"b":', result }]);
    expect(run).toMatchObject({ status: 'completed', output: 'Sorry.', tokenUsage: { inputTokens: 90, outputTokens: 8 } });
  });

  it('sends an invalid tool_use back with empty input and an is_error tool_result (Anthropic)', async () => {
    vendor.script(
      {
        sse: anthropicStream({
          id: 'msg_01',
          blocks: [{ type: 'tool_use', id: 'toolu_bad', name: 'add', input: ['{"a": 2, "b":'] }],
          stop_reason: 'tool_use',
          usage: { input_tokens: 30, output_tokens: 6 },
        }),
      },
      {
        sse: anthropicStream({ id: 'msg_02', blocks: [{ type: 'text', text: ['Sorry.'] }], usage: { input_tokens: 60, output_tokens: 2 } }),
      },
    );
    const { run } = await stream('anthropic/claude-sonnet-4-5', 'add 2 and 3');
    const message = 'Invalid input for tool add: JSON parsing failed: Text: {"a": 2, "b":.\nError message: Unexpected end of JSON input';
    expect(vendor.requests[1].body.messages.slice(1)).toEqual([
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_bad', name: 'add', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_bad', content: message, is_error: true }] },
    ]);
    expect(calls(run)).toEqual([
      { id: 'toolu_bad', name: 'add', input: '{"a": 2, "b":', result: { error: { code: 'invalid_tool_call', message } } },
    ]);
    expect(run).toMatchObject({ status: 'completed', output: 'Sorry.' });
  });

  it('refuses input that parses but breaks the tool’s schema before the tool runs, and tells the model which field (Anthropic)', async () => {
    const rpcBefore = mcp.state.rpc.length;
    vendor.script(
      {
        sse: anthropicStream({
          id: 'msg_01',
          blocks: [{ type: 'tool_use', id: 'toolu_str', name: 'add', input: ['{"a": "two", "b": 3}'] }],
          stop_reason: 'tool_use',
          usage: { input_tokens: 30, output_tokens: 6 },
        }),
      },
      {
        sse: anthropicStream({ id: 'msg_02', blocks: [{ type: 'text', text: ['Sorry.'] }], usage: { input_tokens: 60, output_tokens: 2 } }),
      },
    );
    const { run } = await stream('anthropic/claude-sonnet-4-5', 'add two and 3');
    const message = 'Invalid input for tool add: a must be number (got string)';
    expect(calls(run)).toEqual([
      { id: 'toolu_str', name: 'add', input: { a: 'two', b: 3 }, result: { error: { code: 'invalid_tool_call', message } } },
    ]);
    // The MCP server was asked for its tools, never to call one.
    expect(mcp.state.rpc.slice(rpcBefore)).not.toContain('tools/call');
    // The call goes back as the model made it; its result is the error text, flagged as an error.
    expect(vendor.requests[1].body.messages.slice(1)).toEqual([
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_str', name: 'add', input: { a: 'two', b: 3 } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_str', content: message, is_error: true }] },
    ]);
    expect(run).toMatchObject({ status: 'completed', output: 'Sorry.' });
  });
});

// ====================================================================== 7. Provider warnings

describe('provider warnings', () => {
  it('records the warnings a provider reports at the start of its stream in the run’s warnings, once each', async () => {
    // gpt-5-mini is a reasoning model: @ai-sdk/openai drops the temperature and says so in stream-start.
    const res = await t.api(key).POST('/api/v1/agents', {
      body: {
        name: 'warned',
        appId: 'a',
        model: 'openai/gpt-5-mini',
        tools: [{ type: 'mcp', url: mcp.url }],
        configuration: { temperature: 0.2 },
      },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    vendor.script(
      {
        sse: responsesStream({
          id: 'resp_w1',
          items: [{ type: 'function_call', id: 'fc_w1', call_id: 'call_w1', name: 'add', arguments: ['{"a":1,"b":2}'] }],
          usage: { input_tokens: 40, output_tokens: 9 },
        }),
      },
      {
        sse: responsesStream({
          id: 'resp_w2',
          items: [{ type: 'message', id: 'msg_w2', text: ['3.'] }],
          usage: { input_tokens: 60, output_tokens: 2 },
        }),
      },
    );
    const events = await readSse(await t.fetch(`/api/v1/agents/${res.data!.id}/stream`, key, { body: { message: 'add 1 and 2' } }));
    expect(events.at(-1)!.event).toBe('done');
    // The setting was not sent, as the warning says.
    expect(vendor.requests.map((r) => r.body.temperature)).toEqual([undefined, undefined]);
    const run = await getRun(events.at(-1)!.data.runId);
    expect(run).toMatchObject({ status: 'completed', output: '3.' });
    // Both steps reported it; the run keeps it once.
    expect(run.warnings).toEqual([
      'model warning: the feature "temperature" is not supported (temperature is not supported for reasoning models)',
    ]);
  });

  it('keeps the warnings of a run whose model call then failed', async () => {
    const { id } = await t.agent(key, {
      name: 'warned-failing',
      appId: 'a',
      model: 'openai/gpt-5-mini',
      configuration: { temperature: 0.2 },
    });
    vendor.script({
      sse: responsesStream({
        id: 'resp_w3',
        items: [
          { type: 'message', id: 'msg_w3', text: ['Part'] },
          { type: 'raw', event: { type: 'error', code: 'server_error', message: 'The model produced invalid content.', param: null } },
        ],
        end: false,
      }),
    });
    const events = await readSse(await t.fetch(`/api/v1/agents/${id}/stream`, key, { body: { message: 'hi' } }));
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'model_error' } });
    const runs = (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id } } })).data!.runs;
    const run = await getRun(runs[0].id);
    expect(run).toMatchObject({
      status: 'failed',
      output: 'Part',
      warnings: ['model warning: the feature "temperature" is not supported (temperature is not supported for reasoning models)'],
    });
  });
});
