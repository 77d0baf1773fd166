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
