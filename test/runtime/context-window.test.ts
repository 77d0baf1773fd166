import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { conversationRetention } from '../../src/conversations/retention.js';
import { REPLAYED_RESULT_MAX_CHARS, turnMessages } from '../../src/runtime/context/history.js';
import { PriceTable } from '../../src/runtime/models/prices.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { chatStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';

/**
 * Context that fits the model (docs/runtime.md): the history fitted into a tiny window (set through
 * MODEL_PRICES), the turns pushed out summarised by the summary model, the summary stored with the
 * conversation and refreshed incrementally, its cost in the run; answers' tool calls and results
 * replayed in the history. Each message below is two echo words but ~30 estimated tokens, so a turn
 * (message and answer) is ~60: with a 160-token window less 40 reserved, the prompt holds ~90
 * tokens of history besides the new message, a summary taking a quarter of the 120. The tiny window
 * is a fallback's (the run fits the smallest of its models'); echo itself, which writes the
 * summaries, has room for a summary request (they are fitted into the summary model's own window).
 */

let t: TestApp;
let key: string;
let vendor: FakeProvider;

const PRICES = {
  'builtin/echo': { input: 1, output: 2, contextWindow: 2000, outputReserve: 40 },
  // The same fake vendor behind these: one model with the tiny window, one without any, and two
  // summary models: one whose window holds a summary request only in pieces, one that holds none.
  'openai-compatible/tiny': { contextWindow: 160, outputReserve: 40 },
  'openai-compatible/summarizer': { contextWindow: 260, outputReserve: 40 },
  'openai-compatible/minuscule': { contextWindow: 120, outputReserve: 20 },
};
/** An echo agent whose history is fitted into the tiny window (its never-called fallback's). */
const tinyEcho = (configuration: Record<string, unknown> = {}) => ({
  model: 'builtin/echo',
  configuration: { fallbackModels: ['openai-compatible/tiny'], ...configuration },
});
const fact = (name: string) => `fact-${name} ${name.toLowerCase().repeat(96)}`;

beforeAll(async () => {
  vendor = await startFakeProvider();
  t = await startApp({
    OPENAI_COMPATIBLE_BASE_URL: vendor.baseUrl,
    OPENAI_COMPATIBLE_API_KEY: 'local-secret',
    MODEL_PRICES: JSON.stringify(PRICES),
  });
  ({ key } = await t.tenant());
});
afterAll(async () => {
  await t?.close();
  await vendor?.close();
});
afterEach(() => {
  expect(vendor.unused()).toBe(0);
});

async function say(agentId: string, message: string, conversationId?: string) {
  const res = await execute(t.api(key), agentId, { message, conversationId });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  const run = (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: res.run!.runId } } })).data!;
  return { res: res.run!, run };
}

const summaryOf = (conversationId: string) =>
  t.db.kysely.selectFrom('conversation_summaries').selectAll().where('conversation_id', '=', conversationId).executeTakeFirst();

const messageIds = async (conversationId: string) =>
  (await t.db.kysely.selectFrom('messages').select('id').where('conversation_id', '=', conversationId).orderBy('id').execute()).map(
    (m) => m.id,
  );

describe('a tiny window on builtin/echo', () => {
  it('summarises the turns pushed out, down to half the room, stores the summary, refreshes it with only the newly pushed out, and counts its cost', async () => {
    const agent = await t.agent(key, tinyEcho());
    const first = await say(agent.id, fact('A'));
    const conversationId = first.res.conversationId;
    // One turn of history fits: no summary yet, and nothing but the steps in the usage.
    const second = await say(agent.id, fact('B'), conversationId);
    expect(await summaryOf(conversationId)).toBeUndefined();
    expect(second.run.tokenUsage.inputTokens).toBe(second.run.steps[0].usage.inputTokens);

    // Two turns do not: A's is pushed out, and the summary takes in every turn but those filling half
    // the room, which holds none: A's and B's (echo's summary repeats the request it was given).
    const third = await say(agent.id, fact('C'), conversationId);
    const summary = await summaryOf(conversationId);
    expect(summary).toBeDefined();
    for (const name of ['A', 'B']) {
      expect(summary!.summary).toContain(`user: ${JSON.stringify(fact(name))}`);
      expect(summary!.summary).toContain(`assistant: ${JSON.stringify(fact(name))}`);
    }
    expect(summary!.summary).not.toContain('fact-C');
    const ids = await messageIds(conversationId);
    // B's answer is the newest message the summary reaches.
    expect(summary!.through_message_id).toBe(ids[3]);

    // The summary's model call is in the run: tokens beyond its steps, priced (input 1, output 2 per 1M).
    const stepInput = third.run.steps.reduce((n, s) => n + s.usage.inputTokens, 0);
    const stepOutput = third.run.steps.reduce((n, s) => n + s.usage.outputTokens, 0);
    const summaryInput = third.run.tokenUsage.inputTokens - stepInput;
    const summaryOutput = third.run.tokenUsage.outputTokens - stepOutput;
    expect(summaryInput).toBeGreaterThan(0);
    expect(summaryOutput).toBeGreaterThan(0);
    expect(third.run.cost).toBeCloseTo((third.run.tokenUsage.inputTokens + 2 * third.run.tokenUsage.outputTokens) / 1e6, 12);
    expect(third.res.cost).toBe(third.run.cost);

    // Next, B's turn is pushed out, which the summary covers already: no summary call, the summary as it was.
    const fourth = await say(agent.id, fact('D'), conversationId);
    expect(fourth.run.tokenUsage.inputTokens).toBe(fourth.run.steps.reduce((n, s) => n + s.usage.inputTokens, 0));
    expect(await summaryOf(conversationId)).toEqual(summary);

    // Then C's, which it does not: C's and D's turns are summarised, with the summary so far. (Echo's
    // answer stops at the summary's share of the room, 30 words here, within D's lines.)
    await say(agent.id, fact('E'), conversationId);
    const refreshed = await summaryOf(conversationId);
    expect(refreshed!.through_message_id).toBe((await messageIds(conversationId))[7]);
    expect(refreshed!.summary.startsWith(`Summary so far:\n${summary!.summary}`)).toBe(true);
    const added = refreshed!.summary.slice(`Summary so far:\n${summary!.summary}`.length);
    expect(added).toContain(`user: ${JSON.stringify(fact('C'))}\nassistant: ${JSON.stringify(fact('C'))}\nuser:`);
    for (const name of ['A', 'B', 'E']) expect(added).not.toContain(`fact-${name}`);
  });

  it('a conversation deleted by retention takes its summary with it', async () => {
    const tenant = await t.tenant();
    const agent = await t.agent(tenant.key, tinyEcho());
    const ask = (message: string, conversationId?: string) => execute(t.api(tenant.key), agent.id, { message, conversationId });
    const { conversationId } = (await ask(fact('A'))).run!;
    await ask(fact('B'), conversationId);
    await ask(fact('C'), conversationId);
    expect(await summaryOf(conversationId)).toBeDefined();
    const deleted = await conversationRetention(t.db).deleteConversationsBefore(tenant.id, '9999-01-01T00:00:00.000Z', 100);
    expect(deleted).toBe(1);
    expect(await summaryOf(conversationId)).toBeUndefined();
  });

  it('memoryWindow still bounds the history in messages: nothing is pushed out of what is not given', async () => {
    const agent = await t.agent(key, tinyEcho({ memoryWindow: 2 }));
    const first = await say(agent.id, fact('A'));
    const conversationId = first.res.conversationId;
    await say(agent.id, fact('B'), conversationId);
    await say(agent.id, fact('C'), conversationId);
    // Only the last turn is given each time, and it fits: no summary is ever needed.
    expect(await summaryOf(conversationId)).toBeUndefined();
  });
});

describe('summary requests fitted to the summary model’s own window', () => {
  /** ~80 estimated tokens a line of a summary request's transcript: two of them do not fit one summarizer request. */
  const long = (name: string) => `fact-${name} ${name.toLowerCase().repeat(300)}`;
  const summaryAnswer = (text: string) => ({
    sse: chatStream({ text: [text], finish: 'stop', usage: { prompt_tokens: 5, completion_tokens: 1 } }),
  });
  /** A request's estimated tokens (runtime/context/tokens.ts: characters over four, four a message) with its answer's room. */
  const requestTokens = (body: { messages: { content: string }[]; max_tokens: number }) =>
    body.messages.reduce((n, m) => n + 4 + Math.ceil(m.content.length / 4), 0) + body.max_tokens;
  const userText = (i: number) => vendor.requests[i].body.messages[1].content as string;

  async function eventsOf(runId: string, k: string) {
    const res = await t.api(k).GET('/api/v1/runs/{runId}/events', { params: { path: { runId } }, parseAs: 'text' });
    return res
      .data!.split('\n\n')
      .map((frame) => ({
        event: /^event: (.*)$/m.exec(frame)?.[1],
        data: /^data: (.*)$/m.exec(frame)?.[1],
      }))
      .filter((e) => e.event)
      .map((e) => ({ event: e.event!, data: JSON.parse(e.data!) }));
  }

  it('summarises in pieces that fit (map), then merges the summaries (reduce), the summary so far first', async () => {
    const agent = await t.agent(key, tinyEcho({ summaryModel: 'openai-compatible/summarizer' }));
    const first = await say(agent.id, long('A'));
    const conversationId = first.res.conversationId;
    expect(first.run.contextTruncated).toBe(false);

    // A's turn is pushed out: its two lines do not fit one request, so each is summarised alone, then merged.
    vendor.script(summaryAnswer('sum-A1'), summaryAnswer('sum-A2'), summaryAnswer('merged-A'));
    const second = await say(agent.id, long('B'), conversationId);
    expect(vendor.requests).toHaveLength(3);
    for (const r of vendor.requests) expect(requestTokens(r.body)).toBeLessThanOrEqual(260);
    expect(userText(0)).toContain(`user: ${JSON.stringify(long('A'))}`);
    expect(userText(0)).not.toContain('assistant:');
    expect(userText(1)).toContain(`assistant: ${JSON.stringify(long('A'))}`);
    expect(userText(2)).toContain('Part 1:\nsum-A1');
    expect(userText(2)).toContain('Part 2:\nsum-A2');
    expect((await summaryOf(conversationId))!.summary).toBe('merged-A');
    expect(second.run.contextTruncated).toBe(false);
    expect(second.run.warnings).toEqual([]);

    // B's turn next: its pieces, then a merge that starts from the summary so far.
    vendor.script(summaryAnswer('sum-B1'), summaryAnswer('sum-B2'), summaryAnswer('merged-AB'));
    await say(agent.id, long('C'), conversationId);
    expect(vendor.requests).toHaveLength(3);
    for (const r of vendor.requests) expect(requestTokens(r.body)).toBeLessThanOrEqual(260);
    expect(userText(0)).toContain('fact-B');
    expect(userText(0)).not.toContain('fact-A');
    expect(userText(2)).toMatch(/Part 1:\nmerged-A\n\nPart 2:\nsum-B1\n\nPart 3:\nsum-B2/);
    expect((await summaryOf(conversationId))!.summary).toBe('merged-AB');
  });

  it('a summary model whose window holds no request: the older turns are left out, and the run and its events say so', async () => {
    const agent = await t.agent(key, tinyEcho({ summaryModel: 'openai-compatible/minuscule' }));
    vendor.script();
    const first = await say(agent.id, fact('A'));
    const conversationId = first.res.conversationId;
    await say(agent.id, fact('B'), conversationId);
    const third = await say(agent.id, fact('C'), conversationId);
    // Nothing was sent to the summary model (vendor.unused() is checked after each test).
    expect(vendor.requests).toHaveLength(0);
    expect(third.run.status).toBe('completed');
    expect(third.run.contextTruncated).toBe(true);
    expect(third.run.warnings.join(' ')).toContain("the summary model's context window of 120 tokens cannot hold a summary request");
    const truncated = (await eventsOf(third.res.runId, key)).filter((e) => e.event === 'context_truncated');
    expect(truncated).toEqual([
      { event: 'context_truncated', data: { droppedMessages: 2, reason: expect.stringContaining('cannot hold a summary request') } },
    ]);
    expect(await summaryOf(conversationId)).toBeUndefined();
  });
});

describe('the prompt a provider receives', () => {
  const answer = (text: string) => ({
    sse: chatStream({ text: [text], finish: 'stop', usage: { prompt_tokens: 10, completion_tokens: 2 } }),
  });
  const sentMessages = (i: number) =>
    (vendor.requests[i].body.messages as { role: string; content: unknown }[]).map((m) => ({
      role: m.role,
      content: typeof m.content === 'string' ? m.content.slice(0, 7) : m.content,
    }));

  it('holds the recent turns whole and a summary of the older ones (made by the configured summaryModel)', async () => {
    const agent = await t.agent(key, { model: 'openai-compatible/tiny', configuration: { summaryModel: 'builtin/echo' } });
    vendor.script(answer(fact('A')));
    const { res } = await say(agent.id, fact('A'));
    vendor.script(answer(fact('B')));
    await say(agent.id, fact('B'), res.conversationId);
    vendor.script(answer(fact('C')));
    const third = await say(agent.id, fact('C'), res.conversationId);
    const messages = vendor.requests[0].body.messages as { role: string; content: string }[];
    expect(messages[0].role).toBe('system');
    expect(messages[0].content).toMatch(/^Summary of the earlier conversation \(its older messages are left out\):\n/);
    expect(messages[0].content).toContain('fact-A');
    expect(sentMessages(0).slice(1)).toEqual([
      { role: 'user', content: 'fact-B ' },
      { role: 'assistant', content: 'fact-B ' },
      { role: 'user', content: 'fact-C ' },
    ]);
    // Echo summarised (priced at echo's price, input 1 and output 2 per 1M): the provider's own tokens are free here.
    const summaryInput = third.run.tokenUsage.inputTokens - 10;
    const summaryOutput = third.run.tokenUsage.outputTokens - 2;
    expect(summaryInput).toBeGreaterThan(0);
    expect(third.run.cost).toBeCloseTo((summaryInput + 2 * summaryOutput) / 1e6, 12);
  });

  it('replays an earlier answer’s tool calls and their results before its text', async () => {
    const agent = await t.agent(key, { model: 'openai-compatible/qwen3-8b' });
    vendor.script(
      {
        sse: chatStream({
          toolCalls: [{ id: 'call_1', name: 'skill_discover', arguments: ['{}'] }],
          finish: 'tool_calls',
          usage: { prompt_tokens: 10, completion_tokens: 2 },
        }),
      },
      answer('no skills yet'),
    );
    const { res, run } = await say(agent.id, 'what can you do?');
    const result = run.toolCalls[0].result;
    vendor.script(answer('ok'));
    await say(agent.id, 'and now?', res.conversationId);
    const messages = vendor.requests[0].body.messages;
    expect(messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
    expect(messages[1].tool_calls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'skill_discover', arguments: '{}' } }]);
    expect(messages[2]).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
    expect(JSON.parse(messages[2].content)).toEqual(result);
    expect(messages[3]).toEqual({ role: 'assistant', content: 'no skills yet' });
  });
});

describe('MODEL_PRICES: windows beside prices', () => {
  it('takes contextWindow and outputReserve alone, laid over the built-in entry', () => {
    const { modelPrices } = loadConfig({
      MODEL_PRICES: '{"openai/gpt-4o":{"contextWindow":1000},"local/x":{"contextWindow":64,"outputReserve":8}}',
    });
    const table = new PriceTable(modelPrices);
    expect(table.priceOf('openai/gpt-4o')).toMatchObject({ input: 2.5, output: 10 });
    // No reserve given: a quarter of the window.
    expect(table.windowOf('openai/gpt-4o')).toEqual({ contextWindow: 1000, outputReserve: 250 });
    expect(table.windowOf('local/x')).toEqual({ contextWindow: 64, outputReserve: 8 });
    expect(table.priceOf('local/x')).toEqual({ input: 0, output: 0, contextWindow: 64, outputReserve: 8 });
    expect(table.windowOf('anthropic/claude-sonnet-4-5')).toEqual({ contextWindow: 200_000, outputReserve: 50_000 });
    expect(table.windowOf('builtin/echo')).toBeUndefined();
  });

  it('refuses an entry that is not one', () => {
    for (const bad of [
      '{"m/x":{}}',
      '{"m/x":{"contextWindow":0}}',
      '{"m/x":{"contextWindow":1.5}}',
      '{"m/x":{"input":-1}}',
      '{"m/x":{"window":100}}',
      '{"m/x":{"contextWindow":100,"outputReserve":100}}',
    ]) {
      expect(() => loadConfig({ MODEL_PRICES: bad }), bad).toThrow(/MODEL_PRICES/);
    }
  });
});

describe('replayed tool results', () => {
  it('are cut past 16,000 characters of JSON (a model with no known window gets its history unfitted)', () => {
    const turn = (result: Record<string, unknown>) =>
      turnMessages({ role: 'assistant', content: 'done', toolCalls: [{ id: 'c1', name: 'lookup', input: { q: 1 }, result }] });
    const small = turn({ text: 'x'.repeat(100) });
    expect(small.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
    expect(small[1].content).toEqual([
      { type: 'tool-result', toolCallId: 'c1', toolName: 'lookup', output: { type: 'json', value: { text: 'x'.repeat(100) } } },
    ]);
    const big = turn({ text: 'x'.repeat(REPLAYED_RESULT_MAX_CHARS) });
    const output = (big[1].content[0] as { output: { type: string; value: string } }).output;
    expect(output.type).toBe('text');
    expect(output.value.length).toBeLessThan(REPLAYED_RESULT_MAX_CHARS + 100);
    expect(output.value).toMatch(/\.\.\. \(cut: 16011 characters in all\)$/);
  });
});

describe('a fallback model with a smaller window', () => {
  let own: TestApp;
  beforeAll(async () => {
    // builtin/echo has no window here; its fallback, the tiny model, has the 160 tokens above.
    own = await startApp({
      OPENAI_COMPATIBLE_BASE_URL: vendor.baseUrl,
      OPENAI_COMPATIBLE_API_KEY: 'local-secret',
      MODEL_PRICES: JSON.stringify({
        'openai-compatible/tiny': PRICES['openai-compatible/tiny'],
        // Known to the price table with a tiny window, but its provider is not configured here.
        'anthropic/claude-haiku-4-5': { contextWindow: 100, outputReserve: 40 },
      }),
    });
  });
  afterAll(() => own?.close());

  /** Facts A, B and C said in one conversation; its summary afterwards, and the last run's warnings. */
  async function threeFacts(ownKey: string, agentId: string) {
    let conversationId: string | undefined;
    let warnings: string[] = [];
    for (const name of ['A', 'B', 'C']) {
      const res = await execute(own.api(ownKey), agentId, { message: fact(name), conversationId });
      expect(res.response.status, JSON.stringify(res.error)).toBe(200);
      conversationId = res.run!.conversationId;
      warnings = (await own.api(ownKey).GET('/api/v1/runs/{runId}', { params: { path: { runId: res.run!.runId } } })).data!.warnings;
    }
    const summary = await own.db.kysely
      .selectFrom('conversation_summaries')
      .selectAll()
      .where('conversation_id', '=', conversationId!)
      .executeTakeFirst();
    return { summary, warnings };
  }

  it('fits the history into the smallest window of the model and its fallbacks, which a fallback step would be sent', async () => {
    const { key: ownKey } = await own.tenant();
    const agent = await own.agent(ownKey, { model: 'builtin/echo', configuration: { fallbackModels: ['openai-compatible/tiny'] } });
    const { summary } = await threeFacts(ownKey, agent.id);
    // The oldest turn did not fit the fallback's window: summarised (by echo, the agent's own model; the fallback was never called).
    expect(summary, 'a summary of the turns that did not fit').toBeDefined();
    expect(summary!.summary).toContain(`user: ${JSON.stringify(fact('A'))}`);
    expect(summary!.summary).not.toContain('fact-C');
  });

  it('leaves out a fallback this server cannot use, as the run does', async () => {
    const { key: ownKey } = await own.tenant();
    const agent = await own.agent(ownKey, { model: 'builtin/echo' });
    // Saved while its provider was configured; unconfigured since (agents refuse it on create).
    const configuration = { ...agent.configuration, fallbackModels: ['anthropic/claude-haiku-4-5'] };
    await own.db.kysely
      .updateTable('agents')
      .set({ configuration: JSON.stringify(configuration) })
      .where('id', '=', agent.id)
      .execute();
    const { summary, warnings } = await threeFacts(ownKey, agent.id);
    expect(warnings.join(' ')).toContain('fallback model anthropic/claude-haiku-4-5 left out');
    // echo has no window and the one fallback with a window is left out: nothing is fitted or summarised.
    expect(summary).toBeUndefined();
  });
});
