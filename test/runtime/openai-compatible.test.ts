import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { readSse } from '../helpers/sse.js';

/**
 * The provider code is real (@ai-sdk/openai-compatible); only the remote model is simulated by a
 * small HTTP server speaking the chat-completions streaming format, as Ollama or vLLM would.
 */
function chunk(delta: Record<string, unknown>, finish: string | null = null, usage?: Record<string, number>) {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'tiny', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
}

let server: http.Server;
let baseUrl: string;
const requests: any[] = [];

beforeAll(async () => {
  server = http.createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    const parsed = JSON.parse(body);
    requests.push({ url: req.url, auth: req.headers.authorization, body: parsed });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const hasToolResult = parsed.messages.some((m: { role: string }) => m.role === 'tool');
    if (parsed.tools && !hasToolResult && parsed.messages.at(-1).content.includes('weather')) {
      res.write(
        chunk({
          role: 'assistant',
          tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }],
        }),
      );
      res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }));
      res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }));
      res.write(chunk({}, 'tool_calls', { prompt_tokens: 20, completion_tokens: 7, total_tokens: 27 }));
    } else {
      for (const piece of ['Hello', ' from', ' a local model']) res.write(chunk({ role: 'assistant', content: piece }));
      res.write(chunk({}, 'stop', { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 }));
    }
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('openai-compatible provider', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startApp({
      OPENAI_COMPATIBLE_BASE_URL: baseUrl,
      OPENAI_COMPATIBLE_API_KEY: 'local-secret',
      MODEL_PRICES: JSON.stringify({ 'openai-compatible/tiny': { input: 1, output: 3 } }),
    });
    ({ key } = await t.tenant());
    await t.listen();
  });
  afterAll(() => t.close());

  it('streams a local model’s answer with usage and cost', async () => {
    const agent = await t.agent(key, { name: 'local', appId: 'a', model: 'openai-compatible/tiny', systemPrompt: 'Be nice.' });
    const events = await readSse(await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { body: { message: 'hi there', maxTokens: 50 } }));
    expect(events.filter((e) => e.event === 'token').map((e) => e.data.text)).toEqual(['Hello', ' from', ' a local model']);
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data.tokenUsage).toEqual({ inputTokens: 12, outputTokens: 4 });
    expect(done.data.cost).toBeCloseTo((12 * 1 + 4 * 3) / 1e6, 12);

    const sent = requests.at(-1);
    expect(sent.url).toBe('/v1/chat/completions');
    expect(sent.auth).toBe('Bearer local-secret');
    expect(sent.body).toMatchObject({ model: 'tiny', stream: true, max_tokens: 50 });
    expect(sent.body.messages).toEqual([
      { role: 'system', content: 'Be nice.' },
      { role: 'user', content: 'hi there' },
    ]);
  });

  it('runs the tool loop with a model’s streamed tool call', async () => {
    const { startMcpServer } = await import('../helpers/mcp-server.js');
    const mcp = await startMcpServer();
    try {
      // The simulated model asks for get_weather; the MCP server lacks it, so the loop records a tool error.
      const agent = await t.agent(key, { name: 'w', appId: 'a', model: 'openai-compatible/tiny', tools: [{ type: 'mcp', url: mcp.url }] });
      const res = await execute(t.api(key), agent.id, { message: 'weather please' });
      expect(res.response.status, JSON.stringify(res.error)).toBe(200);
      expect(res.run!.toolCalls[0]).toMatchObject({ name: 'get_weather', input: { city: 'Oslo' } });
      expect(res.run!.output).toBe('Hello from a local model');
      expect(res.run!.tokenUsage).toEqual({ inputTokens: 32, outputTokens: 11 });
      const second = requests.at(-1).body;
      expect(second.tools.map((x: { function: { name: string } }) => x.function.name).sort()).toEqual(['add', 'broken', 'shout', 'slow']);
      expect(second.messages.some((m: { role: string }) => m.role === 'tool')).toBe(true);
    } finally {
      await mcp.close();
    }
  });
});
