#!/usr/bin/env node
// What one model step costs, apart from everything else Agentry does: the CPU time of the AI SDK's
// `streamText` (drained to the end) with the builtin/echo model, of Agentry's own step driver
// (`streamStep`, runtime/model-step.ts, which the tool loop uses), and of the echo model's own `doStream`
// drained directly, for 1, 10 and 50 messages of history. No database, no HTTP.
// docs/benchmarks-history.md (third round) uses it to say what bounded execute.   node bench/ai-sdk-floor.js  (after npm run build)
import { streamText } from 'ai';
import { EchoLanguageModel } from '../dist/runtime/models/echo.js';
import { streamStep } from '../dist/runtime/model-step.js';

const model = new EchoLanguageModel();
const SYSTEM = 'You are a support agent for a mid-sized online shop.';
const CALLS = 1000;

async function cpuPerCall(fn) {
  for (let i = 0; i < 200; i++) await fn(); // warm-up (JIT)
  const c0 = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) await fn();
  const c = process.cpuUsage(c0);
  return Math.round((c.user + c.system) / CALLS);
}

for (const n of [1, 10, 50]) {
  /** @type {{ role: 'user' | 'assistant', content: string }[]} */
  const messages = [];
  for (let i = 0; i < n - 1; i++)
    messages.push({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}: where is my order? It was due yesterday.` });
  messages.push({ role: 'user', content: 'Hello, where is my order 4711? It was due yesterday.' });
  /** @type {import('@ai-sdk/provider').LanguageModelV3Prompt} */
  const prompt = [
    { role: 'system', content: SYSTEM },
    ...messages.map((m) => ({ role: m.role, content: [{ type: /** @type {const} */ ('text'), text: m.content }] })),
  ];
  const sdk = await cpuPerCall(async () => {
    const r = streamText({ model, system: SYSTEM, messages });
    for await (const _ of r.fullStream);
  });
  const driver = await cpuPerCall(async () => {
    await streamStep({ model }, { options: { prompt }, toolNames: new Set() }, { onText() {} });
  });
  const direct = await cpuPerCall(async () => {
    const { stream } = await model.doStream({ prompt });
    const reader = stream.getReader();
    while (!(await reader.read()).done);
  });
  process.stdout.write(
    `${String(n).padStart(2)} messages: streamText ${sdk} us CPU per step; Agentry's streamStep ${driver} us; the model's doStream alone ${direct} us\n`,
  );
}
