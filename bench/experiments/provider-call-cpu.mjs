#!/usr/bin/env node
// One provider model's streamed call alone, no server: the AI SDK model's doStream against Agentry's
// lean reader of the same API (runtime/models/responses.ts, anthropic-messages.ts, chat-completions.ts),
// each drained to its end against bench/mock-provider.js (started here), in alternating blocks of calls,
// CPU time per call from process.cpuUsage. Only the ratio of the two in the same rounds means much on a
// shared machine (docs/benchmarks.md, "Real models, second round").
//
//   npm run build && node bench/experiments/provider-call-cpu.mjs openai|anthropic|openai-compatible
//   options: --rounds 10 --calls 150 (per block) --warmup 300
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { MessagesEndpoint } from '../../dist/runtime/models/anthropic-messages.js';
import { ChatCompletionsServer } from '../../dist/runtime/models/chat-completions.js';
import { ResponsesEndpoint } from '../../dist/runtime/models/responses.js';
import { startChild } from '../processes.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '10' },
    calls: { type: 'string', default: '150' },
    warmup: { type: 'string', default: '300' },
  },
});
const provider = positionals[0] ?? 'openai';
const mock = await startChild('mock-provider', [path.join('bench', 'mock-provider.js')], { ...process.env }, '/health');
const baseURL = `${mock.url}/v1`;

/** The AI SDK's model of the provider, and the lean reader around it (as runtime/models/registry.ts makes them). */
function models() {
  if (provider === 'openai') {
    const sdk = createOpenAI({ apiKey: 'bench', baseURL })('bench-mock');
    return { sdk, lean: new ResponsesEndpoint().model(sdk) };
  }
  if (provider === 'anthropic') {
    const sdk = createAnthropic({ apiKey: 'bench', baseURL })('bench-mock');
    return { sdk, lean: new MessagesEndpoint().model(sdk) };
  }
  const sdk = createOpenAICompatible({ name: 'openai-compatible', baseURL, includeUsage: true })('bench-mock');
  return { sdk, lean: new ChatCompletionsServer({ name: 'openai-compatible', baseUrl: baseURL }).model('bench-mock', sdk) };
}
const { sdk, lean } = models();

/** @type {import('@ai-sdk/provider').LanguageModelV3Prompt} */
const prompt = [
  { role: 'system', content: 'You are a support agent.' },
  { role: 'user', content: [{ type: 'text', text: 'Hello, where is my order 4711? It was due yesterday.' }] },
];

/** One call drained; its text must be the mock's canned answer, so a failing path is never timed as a fast one. */
async function call(model) {
  const { stream } = await model.doStream({ prompt });
  const reader = stream.getReader();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value.type === 'text-delta') text += value.delta;
    if (value.type === 'error') throw new Error(`the stream failed: ${JSON.stringify(value.error)}`);
  }
  if (!text.includes('4711')) throw new Error(`not the canned answer: ${text}`);
}

async function block(model, n) {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) await call(model);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

for (let i = 0; i < Number(values.warmup); i++) {
  await call(sdk);
  await call(lean);
}
const sdkUs = [];
const leanUs = [];
for (let round = 0; round < Number(values.rounds); round++) {
  sdkUs.push(await block(sdk, Number(values.calls)));
  leanUs.push(await block(lean, Number(values.calls)));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const list = (xs) => xs.map((x) => x.toFixed(0)).join(' ');
console.log(`${provider}: AI SDK doStream ${median(sdkUs).toFixed(0)} µs CPU per call (rounds: ${list(sdkUs)})`);
console.log(`${provider}: lean reader ${median(leanUs).toFixed(0)} µs CPU per call (rounds: ${list(leanUs)})`);
console.log(`${provider}: median of per-round ratios lean / AI SDK: ${median(leanUs.map((x, i) => x / sdkUs[i])).toFixed(2)}`);
await mock.stop();
