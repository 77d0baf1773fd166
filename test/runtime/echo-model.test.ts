import { generateText, jsonSchema, streamText, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { EchoLanguageModel } from '../../src/runtime/models/echo.js';
import { PriceTable } from '../../src/runtime/models/prices.js';
import { parseModelId } from '../../src/runtime/models/model-id.js';

const model = new EchoLanguageModel();

describe('builtin/echo through the AI SDK', () => {
  it('streams the user message word by word and counts words as tokens', async () => {
    const result = streamText({ model, system: 'be brief', prompt: 'hello brave  new world' });
    const deltas: string[] = [];
    for await (const d of result.textStream) deltas.push(d);
    expect(deltas).toEqual(['hello ', 'brave  ', 'new ', 'world']);
    const usage = await result.usage;
    expect(usage.inputTokens).toBe(6); // "be brief" + 4 words
    expect(usage.outputTokens).toBe(4);
  });

  it('counts words split by any whitespace JavaScript knows, tool results included, as tokens', async () => {
    const text = ' un\u00a0deux\u3000trois\u2028quatre\tcinq\u200a six\ufeffsept  ';
    const expected = text.split(/\s+/).filter(Boolean).length;
    expect(expected).toBe(7);
    const result = await generateText({ model, system: 'sys tem', prompt: text });
    expect(result.usage.inputTokens).toBe(2 + expected);
    expect(result.usage.outputTokens).toBe(expected);
    // A directive-free message that mentions a slash is still all text.
    const slashed = await generateText({ model, prompt: 'either/or and / alone' });
    expect(slashed.text).toBe('either/or and / alone');
    expect(slashed.usage.inputTokens).toBe(4);
  });

  it('calls a tool on /tool, then answers with its result', async () => {
    const result = await generateText({
      model,
      prompt: 'please\n/tool add {"a":2,"b":3}',
      tools: {
        add: tool({
          inputSchema: jsonSchema<{ a: number; b: number }>({
            type: 'object',
            properties: { a: { type: 'number' }, b: { type: 'number' } },
          }),
          execute: async ({ a, b }) => ({ sum: a + b }),
        }),
      },
      stopWhen: ({ steps }) => steps.length >= 2,
    });
    expect(result.steps[0].toolCalls.map((c) => [c.toolName, c.input])).toEqual([['add', { a: 2, b: 3 }]]);
    expect(result.text).toBe('add returned {"sum":5}');
  });

  it('fails on /fail and caps output at maxOutputTokens', async () => {
    await expect(generateText({ model, prompt: '/fail out of cheese', maxRetries: 0 })).rejects.toThrow('out of cheese');
    const capped = await generateText({ model, prompt: 'one two three four five', maxOutputTokens: 2 });
    expect(capped.text).toBe('one two');
    expect(capped.finishReason).toBe('length');
  });

  it('waits /delay ms per token and stops when aborted', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const result = streamText({ model, prompt: '/delay 40\na b c d e f', abortSignal: controller.signal });
    const seen: string[] = [];
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') {
        seen.push(part.text);
        if (seen.length === 2) controller.abort();
      }
    }
    expect(seen).toEqual(['a ', 'b ']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);
  });
});

describe('model identifiers and prices', () => {
  it('parses provider/name', () => {
    expect(parseModelId('openai/gpt-4o-mini')).toEqual({ provider: 'openai', name: 'gpt-4o-mini' });
    expect(parseModelId('openai-compatible/llama3.1:8b')).toEqual({ provider: 'openai-compatible', name: 'llama3.1:8b' });
    expect(typeof parseModelId('mistral/large')).toBe('string');
    expect(typeof parseModelId('builtin/nope')).toBe('string');
  });

  it('turns usage into USD from the table, overridable', () => {
    const prices = new PriceTable({ 'openai-compatible/llama': { input: 0.5, output: 1.5 } });
    expect(prices.cost('openai/gpt-4o-mini', 1_000_000, 1_000_000)).toBeCloseTo(0.75, 10);
    expect(prices.cost('openai/gpt-4o-mini', 1234, 567)).toBeCloseTo((1234 * 0.15 + 567 * 0.6) / 1e6, 12);
    expect(prices.cost('openai-compatible/llama', 2000, 1000)).toBeCloseTo(0.0025, 12);
    expect(prices.cost('builtin/echo', 10_000, 10_000)).toBe(0);
    expect(prices.cost('unknown/model', 10_000, 10_000)).toBe(0);
  });
});
