import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { generateText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

/**
 * Failures that a retry cannot change, through the official clients with their own retry rules
 * (docs/clients.md, "Failures and retries"): a failed run, a cancelled run and a paused agent each
 * cost one request and at most one run, and the client throws an error that names the cause.
 */

let t: TestApp;
let baseURL: string;

beforeAll(async () => {
  t = await startApp();
  baseURL = `${await t.listen()}/v1`;
});
afterAll(() => t?.close());

/** A fetch that counts the requests a client sends (its retries included). */
function counting() {
  const counter = {
    requests: 0,
    fetch: (input: string | URL | Request, init?: RequestInit) => {
      counter.requests++;
      return fetch(input, init);
    },
  };
  return counter;
}

/**
 * Each client with its default retry rules. The AI SDK and openai retry twice by default; LangChain six
 * times with a backoff that would make a failing case take a minute, so it is told two as well: whether
 * it retries at all is what counts.
 */
const clients: Record<string, (key: string, model: string, prompt: string, fetch: typeof globalThis.fetch) => Promise<unknown>> = {
  openai: (apiKey, model, prompt, fetch) =>
    new OpenAI({ baseURL, apiKey, fetch }).chat.completions.create({ model, messages: [{ role: 'user', content: prompt }] }),
  'AI SDK': (apiKey, model, prompt, fetch) =>
    generateText({ model: createOpenAICompatible({ name: 'agentry', baseURL, apiKey, fetch }).chatModel(model), prompt }),
  LangChain: (apiKey, model, prompt, fetch) =>
    new ChatOpenAI({ model, apiKey, maxRetries: 2, configuration: { baseURL, fetch } }).invoke(prompt),
};

async function failure(promise: Promise<unknown>): Promise<Error & { status?: number; statusCode?: number }> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the client to throw');
}

async function runsOf(key: string, agentId: string) {
  const { data, response } = await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } });
  return response.status === 404 ? [] : data!.runs;
}

describe.each(Object.keys(clients))('%s', (name) => {
  const call = clients[name];

  it('a failed run: one request, one run, an error naming the failure', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const counter = counting();
    const err = await failure(call(key, `agent:${agent.id}`, '/fail the provider is down', counter.fetch));
    expect(err.message).toContain('the run failed');
    expect(err.message).toContain('the provider is down');
    expect(err.status ?? err.statusCode).toBe(400);
    expect(counter.requests).toBe(1);
    const runs = await runsOf(key, agent.id);
    expect(runs.map((r) => r.status)).toEqual(['failed']);
  });

  it('a run cancelled while it answers: one request, one run, an error saying it was cancelled', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const counter = counting();
    const pending = failure(call(key, `agent:${agent.id}`, '/delay 200\none two three four five', counter.fetch));
    const runId = await vi.waitFor(
      async () => {
        const id = (await runsOf(key, agent.id))[0]?.id;
        if (!id) throw new Error('no run yet');
        return id;
      },
      { timeout: 5000, interval: 20 },
    );
    expect((await t.api(key).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId } } })).response.status).toBe(200);
    const err = await pending;
    expect(err.message).toContain(`the run was cancelled (run ${runId})`);
    expect(err.status ?? err.statusCode).toBe(400);
    expect(counter.requests).toBe(1);
    // The answer came after the run's end: any retry would have started its run by now.
    const runs = await runsOf(key, agent.id);
    expect(runs.map((r) => r.status)).toEqual(['cancelled']);
  });

  it('a paused agent: one request, no run, an error saying the agent is paused', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    expect((await t.api(key).POST('/api/v1/agents/{id}/pause', { params: { path: { id: agent.id } } })).response.status).toBe(200);
    const counter = counting();
    const err = await failure(call(key, `agent:${agent.id}`, 'hello', counter.fetch));
    expect(err.message).toContain('the agent is paused');
    expect(err.status ?? err.statusCode).toBe(400);
    expect(counter.requests).toBe(1);
    expect(await runsOf(key, agent.id)).toEqual([]);
  });
});

describe('Idempotency-Key on /v1/chat/completions', () => {
  it('a retry with the key answers the first run (marked replayed), even a failed one; another body is 422', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const openai = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
    const model = `agent:${agent.id}`;
    const request = { model, messages: [{ role: 'user' as const, content: 'say it once' }] };

    const first = await openai.chat.completions.create(request, { headers: { 'Idempotency-Key': 'once' } }).withResponse();
    const again = await openai.chat.completions.create(request, { headers: { 'Idempotency-Key': 'once' } }).withResponse();
    expect(again.data).toEqual(first.data);
    expect(again.response.headers.get('x-run-id')).toBe(first.response.headers.get('x-run-id'));
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(first.response.headers.get('idempotent-replayed')).toBeNull();

    // Streamed, the replay is the same answer again.
    const streamed = async () => {
      let text = '';
      for await (const chunk of await openai.chat.completions.create(
        { ...request, stream: true },
        { headers: { 'Idempotency-Key': 'streamed' } },
      )) {
        text += chunk.choices[0]?.delta.content ?? '';
      }
      return text;
    };
    expect(await streamed()).toBe('say it once');
    expect(await streamed()).toBe('say it once');

    const failing = { model, messages: [{ role: 'user' as const, content: '/fail broken' }] };
    for (let i = 0; i < 2; i++) {
      const err = await failure(openai.chat.completions.create(failing, { headers: { 'Idempotency-Key': 'failing' } }));
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('model_error');
    }

    const reused = await failure(
      openai.chat.completions.create(
        { model, messages: [{ role: 'user', content: 'something else' }] },
        { headers: { 'Idempotency-Key': 'once' } },
      ),
    );
    expect(reused).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((reused as InstanceType<typeof OpenAI.APIError>).code).toBe('idempotency_key_reused');

    // once, streamed, failing: three runs for six requests that started one.
    expect((await runsOf(key, agent.id)).length).toBe(3);
  });
});
