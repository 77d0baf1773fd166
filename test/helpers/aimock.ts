import { LLMock } from '@copilotkit/aimock';

/**
 * aimock (@copilotkit/aimock): a local server speaking OpenAI's, Anthropic's and OpenAI-compatible
 * APIs, answering the fixtures a test adds and keeping a journal of the requests it received.
 */

/** A started aimock on a free loopback port, answering without latency, silent; `stop()` it after the tests. */
export async function startAimock(): Promise<LLMock> {
  const mock = new LLMock({ port: 0, host: '127.0.0.1', latency: 0, logLevel: 'silent' });
  await mock.start();
  return mock;
}

/** The variables pointing the app's three providers at `mock` (their keys are never checked there). */
export function providerEnv(mock: LLMock): Record<string, string> {
  return {
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'sk-test',
    ANTHROPIC_BASE_URL: `${mock.url}/v1`,
    ANTHROPIC_API_KEY: 'sk-ant-test',
    OPENAI_COMPATIBLE_BASE_URL: `${mock.url}/v1`,
  };
}

/** The requests `mock` received whose body holds `text` (a test's own message tells its requests apart). */
export const requestsWith = (mock: LLMock, text: string) => mock.getRequests().filter((e) => JSON.stringify(e.body ?? '').includes(text));

/**
 * One model per vendor API, with the number of stream chunks its answer starts with before the first
 * text delta. A cut stream's fixture has a latency between chunks, else aimock cuts the socket before
 * any chunk is flushed.
 */
export const VENDOR_MODELS = [
  { model: 'openai/gpt-5-mini', preamble: 4 },
  { model: 'anthropic/claude-sonnet-4-5', preamble: 2 },
  { model: 'openai-compatible/qwen3-8b', preamble: 1 },
] as const;

/**
 * A provider in front of `mock` whose embeddings report the tokens they spent, as OpenAI's do
 * (aimock's report 0): each text counts its words. Everything else passes through unchanged.
 * `received` holds each request's body as it arrives (aimock journals one only once it answers, so
 * a request it is holding back is seen here first). `url` is its /v1 base; `stop()` it after the tests.
 */
export async function embeddingsWithUsage(mock: LLMock): Promise<{ url: string; received: string[]; stop: () => Promise<void> }> {
  const { createServer } = await import('node:http');
  const received: string[] = [];
  const server = createServer((req, res) => {
    forward(req, res).catch(() => res.destroy());
  });
  const forward = async (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    received.push(body.toString());
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => !['host', 'content-length', 'connection'].includes(name)),
    ) as Record<string, string>;
    const upstream = await fetch(`${mock.url}${req.url}`, { method: req.method, headers, body: body.length ? body : undefined });
    let text = await upstream.text();
    if (req.url?.endsWith('/embeddings') && upstream.ok) {
      const input = (JSON.parse(body.toString()) as { input: string | string[] }).input;
      const tokens = [input].flat().reduce((sum, s) => sum + wordCount(s), 0);
      const answer = JSON.parse(text) as { usage: Record<string, number> };
      answer.usage = { prompt_tokens: tokens, total_tokens: tokens };
      text = JSON.stringify(answer);
    }
    const retryAfter = upstream.headers.get('retry-after');
    res.writeHead(upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
      ...(retryAfter ? { 'retry-after': retryAfter } : {}),
    });
    res.end(text);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    received,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The tokens embeddingsWithUsage reports for a text: its words. */
export const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length;
