import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { chatStream, openaiError, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse } from '../helpers/sse.js';

/**
 * The edges of an OpenAI-compatible chat-completions answer (runtime/models/chat-completions.ts reads
 * the stream itself, not through the AI SDK's doStream): answers that are malformed, refused, cut or
 * oddly ordered end as the AI SDK's own reading ended them. A local server plays each answer back.
 */

let t: TestApp;
let key: string;
let vendor: FakeProvider;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
const MODEL = 'openai-compatible/qwen3-8b';

beforeAll(async () => {
  vendor = await startFakeProvider();
  mcp = await startMcpServer();
  t = await startApp({ OPENAI_COMPATIBLE_BASE_URL: vendor.baseUrl, MODEL_RETRY_BASE_MS: '1' });
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
  t.agent(key, { name: 'chat', appId: 'a', model: MODEL, systemPrompt: 'Be brief.', tools: [{ type: 'mcp', url: mcp.url }] });
const data = (value: unknown) => `data: ${typeof value === 'string' ? value : JSON.stringify(value)}\n\n`;
const chunk = (delta: Record<string, unknown> | null, finish_reason: string | null = null) =>
  data({
    id: 'chatcmpl-9',
    object: 'chat.completion.chunk',
    created: 1_760_000_000,
    model: 'qwen3-8b',
    choices: [{ index: 0, delta, finish_reason }],
  });
const usage = data({ id: 'chatcmpl-9', choices: [], usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 } });
const fine = { sse: chatStream({ text: ['Fine.'], finish: 'stop', usage: { prompt_tokens: 12, completion_tokens: 3 } }) };

async function run(message: string) {
  const a = await agent();
  const res = await execute(t, key, a.id, { message });
  return { status: res.response.status, run: res.data, error: res.error as { code?: string; detail?: string } | undefined };
}

/** The run as GET /api/v1/runs/:id answers it (its tool calls with their ids). */
const stored = async (runId: string) => (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;

describe('an answer the provider got wrong is retried, as any failed call', () => {
  it('a chunk that is not JSON, before any text', async () => {
    vendor.script({ sse: [chunk({ role: 'assistant', content: '' }), data('{"choices": [ {'), chunk({}, 'stop'), usage] }, fine);
    const { status, run: answer } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(status).toBe(200);
    expect(answer).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('a chunk of the wrong shape (choices not a list)', async () => {
    vendor.script({ sse: [data({ id: 'x', choices: { index: 0 } }), chunk({}, 'stop'), usage] }, fine);
    const { run: answer } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(answer).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('a stream that ends without a finish reason', async () => {
    vendor.script({ sse: [chunk({ role: 'assistant', content: '' }), usage, data('[DONE]')] }, fine);
    const { run: answer } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(answer).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('a stream past 64 MiB (here of comments, which carry nothing) is cut there, not read to its end', async () => {
    const padding = `: ${'x'.repeat(1024 * 1024 - 3)}\n`;
    vendor.script(
      { sse: [chunk({ role: 'assistant', content: '' }), ...Array.from({ length: 65 }, () => padding), chunk({}, 'stop'), usage] },
      fine,
    );
    const { run: answer } = await run('hello');
    expect(vendor.requests).toHaveLength(2);
    expect(answer).toMatchObject({ status: 'completed', output: 'Fine.' });
  });

  it('an HTML page where the API was expected (502), in the status line’s words when every attempt gets it', async () => {
    const page = { status: 502, text: '<html><body>Bad gateway</body></html>' };
    vendor.script(page, page, page);
    const { status, error } = await run('hello');
    expect(vendor.requests).toHaveLength(3);
    expect(status).toBe(502);
    expect(error).toMatchObject({ code: 'provider_unavailable' });
    expect(error!.detail).toMatch(/^the run failed: Bad Gateway \(run [0-9a-f-]+\)$/);
  });
});

describe('what the provider said is kept', () => {
  it('a 400 fails the run at once with the provider’s message', async () => {
    vendor.script(openaiError(400, 'This model’s maximum context length is 8192 tokens.'));
    const { status, error } = await run('hello');
    expect(vendor.requests).toHaveLength(1);
    expect(status).toBe(502);
    expect(error).toMatchObject({ code: 'provider_bad_request' });
    expect(error!.detail).toMatch(/^the run failed: This model’s maximum context length is 8192 tokens\. \(run [0-9a-f-]+\)$/);
  });

  it('an error chunk after the text ends the step with the provider’s words, the text kept', async () => {
    vendor.script({
      sse: [chunk({ role: 'assistant', content: 'Partly' }), data({ error: { message: 'upstream model crashed', type: 'server_error' } })],
    });
    const a = await agent();
    const events = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: 'hello' } }));
    expect(vendor.requests).toHaveLength(1);
    expect(events.map((e) => e.event)).toEqual(['token', 'error']);
    expect(events[0].data).toEqual({ text: 'Partly' });
  });

  it('reasoning deltas stay out of the answer; the text is the answer', async () => {
    vendor.script({
      sse: [
        chunk({ role: 'assistant', reasoning_content: 'The user greets; ' }),
        chunk({ reasoning_content: 'answer briefly.' }),
        chunk({ content: 'Hi' }),
        chunk({ content: ' there.' }),
        chunk({}, 'stop'),
        usage,
        data('[DONE]'),
      ],
    });
    const { run: answer } = await run('hello');
    expect(answer).toMatchObject({ status: 'completed', output: 'Hi there.', tokenUsage: { inputTokens: 12, outputTokens: 3 } });
  });
});

describe('tool calls as servers stream them', () => {
  it('arguments that come before the call’s name and id are joined to it', async () => {
    vendor.script(
      {
        sse: [
          chunk({ role: 'assistant', content: null }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a": 2,' } }] }),
          chunk({ tool_calls: [{ index: 0, id: 'call_late', type: 'function', function: { name: 'add', arguments: ' "b": 3}' } }] }),
          chunk({}, 'tool_calls'),
          usage,
        ],
      },
      { sse: chatStream({ text: ['5'], finish: 'stop', usage: { prompt_tokens: 20, completion_tokens: 1 } }) },
    );
    const { run: answer } = await run('add 2 and 3');
    expect(answer).toMatchObject({ status: 'completed', output: '5' });
    expect((await stored(answer!.runId)).toolCalls.map(({ id, name, input, result }) => ({ id, name, input, result }))).toEqual([
      { id: 'call_late', name: 'add', input: { a: 2, b: 3 }, result: { sum: 5 } },
    ]);
    expect(vendor.requests[1].body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_late', content: '{"sum":5}' });
  });

  it('a call without an index (as some servers send) still runs', async () => {
    vendor.script(
      {
        sse: [
          chunk({ tool_calls: [{ id: 'call_noindex', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":1}' } }] }),
          chunk({}, 'tool_calls'),
          usage,
        ],
      },
      { sse: chatStream({ text: ['2'], finish: 'stop', usage: { prompt_tokens: 20, completion_tokens: 1 } }) },
    );
    const { run: answer } = await run('add 1 and 1');
    expect(answer).toMatchObject({ status: 'completed', output: '2' });
    expect((await stored(answer!.runId)).toolCalls.map(({ id, input }) => ({ id, input }))).toEqual([
      { id: 'call_noindex', input: { a: 1, b: 1 } },
    ]);
  });
});
