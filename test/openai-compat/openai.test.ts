import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let baseURL: string;

beforeAll(async () => {
  // A price for builtin/echo, so runs record a cost (USD per million words: a word costs a cent).
  t = await startApp({ MODEL_PRICES: JSON.stringify({ 'builtin/echo': { input: 10_000, output: 10_000 } }) });
  baseURL = `${await t.listen()}/v1`;
});
afterAll(() => t?.close());

/** The official client against this server; no retries, so each refusal is seen as it is. */
const client = (apiKey: string) => new OpenAI({ baseURL, apiKey, maxRetries: 0 });

const pause = (key: string, id: string) => t.api(key).POST('/api/v1/agents/{id}/pause', { params: { path: { id } } });
const messagesOf = async (key: string, id: string) =>
  (await t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path: { id } } })).data!.messages;
const runsOf = async (key: string, id: string) => (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id } } })).data!;

async function caught(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  throw new Error('expected an OpenAI API error');
}

describe('GET /v1/models', () => {
  it('lists the tenant’s executable agents as agent:<id>, with their appId and name', async () => {
    const { key } = await t.tenant();
    const support = await t.agent(key, { name: 'support-bot', appId: 'support', model: 'builtin/echo', description: 'answers tickets' });
    const paused = await t.agent(key, { name: 'paused-bot', model: 'builtin/echo' });
    expect((await pause(key, paused.id)).response.status).toBe(200);
    await t.agent((await t.tenant()).key, { name: 'other-tenant' });

    const models = [];
    for await (const model of client(key).models.list()) models.push(model);
    expect(models).toEqual([
      {
        id: `agent:${support.id}`,
        object: 'model',
        created: Math.floor(Date.parse(support.createdAt) / 1000),
        owned_by: 'support',
        name: 'support-bot',
        app_id: 'support',
        description: 'answers tickets',
      },
    ]);
  });
});

describe('GET /v1/models/{model}', () => {
  it('openai’s models.retrieve answers a listed model; any other is 404 naming it', async () => {
    const { key } = await t.tenant();
    const support = await t.agent(key, { name: 'support-bot', appId: 'support', model: 'builtin/echo', description: 'answers tickets' });
    const paused = await t.agent(key, { name: 'paused-bot', model: 'builtin/echo' });
    expect((await pause(key, paused.id)).response.status).toBe(200);
    const other = await t.agent((await t.tenant()).key, { model: 'builtin/echo' });

    const model = await client(key).models.retrieve(`agent:${support.id}`);
    expect(model).toEqual({
      id: `agent:${support.id}`,
      object: 'model',
      created: Math.floor(Date.parse(support.createdAt) / 1000),
      owned_by: 'support',
      name: 'support-bot',
      app_id: 'support',
      description: 'answers tickets',
    });
    // What the list says of it, the retrieve says too.
    const listed = [];
    for await (const m of client(key).models.list()) listed.push(m);
    expect(listed).toEqual([model]);

    for (const id of [`agent:${paused.id}`, `agent:${other.id}`, 'agent:not-an-id', 'gpt-4o']) {
      const err = await caught(client(key).models.retrieve(id));
      expect(err, id).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.error, id).toEqual({ message: `model ${id} not found`, type: 'invalid_request_error', code: 'not_found', param: null });
      expect(err.message, id).toBe(`404 model ${id} not found`);
    }
  });
});

describe('every /v1 error in OpenAI’s shape', () => {
  it('an unknown /v1 path is 404 with a message the client shows, not “(no body)”; another method is 405', async () => {
    const { key } = await t.tenant();
    const openai = client(key);
    const missing = await caught(openai.get('/embeddings-nope'));
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.message).toMatch(/^404 no route for GET \/v1\/embeddings-nope/);
    expect(missing.error).toMatchObject({ type: 'invalid_request_error', code: 'route_not_found', param: null });
    const wrongMethod = await caught(openai.post('/models', { body: {} }));
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers?.get('allow')).toBe('GET');
    expect(wrongMethod.error).toMatchObject({ message: 'POST is not allowed on /v1/models; use GET', code: 'method_not_allowed' });
    // Before authentication too: a client with a bad key learns the path is wrong, in the same shape.
    // Raw: a route no client knows.
    const raw = await t.raw('GET', '/v1/nope', { key: null });
    expect(raw.status).toBe(404);
    expect(raw.headers['content-type']).toMatch(/^application\/json/);
    expect(raw.body).toEqual({
      error: {
        message: expect.stringContaining('no route for GET /v1/nope'),
        type: 'invalid_request_error',
        code: 'route_not_found',
        param: null,
      },
    });
  });

  it('a body that fails its schema, or is not JSON, is 400 in OpenAI’s shape naming the parameter', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const err = await caught(client(key).chat.completions.create({ model: `agent:${agent.id}`, messages: [] }));
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.error).toEqual({
      message: 'body.messages must NOT have fewer than 1 items',
      type: 'invalid_request_error',
      code: 'validation_failed',
      param: 'messages',
    });
    const notJson = await t.raw('POST', '/v1/chat/completions', {
      key,
      headers: { 'content-type': 'application/json' },
      payload: '{"model":',
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toEqual({
      error: { message: 'the body is not valid JSON', type: 'invalid_request_error', code: 'invalid_json', param: null },
    });
  });
});

describe('POST /v1/chat/completions', () => {
  it('runs the agent: the last user message is the input, earlier turns and system messages reach the model', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo', systemPrompt: 'You repeat.' });
    const openai = client(key);

    const alone = await openai.chat.completions.create({
      model: `agent:${agent.id}`,
      messages: [{ role: 'user', content: 'echo these words' }],
    });
    const { data, response } = await openai.chat.completions
      .create({
        model: `agent:${agent.id}`,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hello' },
          { role: 'assistant', content: 'hi' },
          { role: 'user', content: [{ type: 'text', text: 'echo these words' }] },
        ],
        temperature: 0.2,
      })
      .withResponse();

    const runId = response.headers.get('x-run-id')!;
    expect(data).toEqual({
      id: `chatcmpl-${runId}`,
      object: 'chat.completion',
      created: expect.any(Number),
      model: `agent:${agent.id}`,
      choices: [
        { index: 0, message: { role: 'assistant', content: 'echo these words', refusal: null }, finish_reason: 'stop', logprobs: null },
      ],
      usage: { prompt_tokens: expect.any(Number), completion_tokens: 3, total_tokens: expect.any(Number) },
    });
    // builtin/echo counts the words of its whole prompt: "Be brief." "hello" "hi" are four more.
    expect(data.usage!.prompt_tokens).toBe(alone.usage!.prompt_tokens + 4);
    expect(data.usage!.total_tokens).toBe(data.usage!.prompt_tokens + 3);

    // Recorded as any run: its kind, input, output, tokens and cost; the conversation holds the input and the answer.
    const { data: run } = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
    expect(run).toMatchObject({
      kind: 'chat_completion',
      status: 'completed',
      input: 'echo these words',
      output: 'echo these words',
      conversationId: response.headers.get('x-agentry-conversation-id'),
      tokenUsage: { inputTokens: data.usage!.prompt_tokens, outputTokens: 3 },
    });
    expect(run!.cost).toBeCloseTo((data.usage!.total_tokens * 10_000) / 1_000_000, 10);
    const messages = await messagesOf(key, run!.conversationId!);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'echo these words'],
      ['assistant', 'echo these words'],
    ]);
  });

  it('applies max_tokens and says finish_reason length', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const data = await client(key).chat.completions.create({
      model: `agent:${agent.id}`,
      messages: [{ role: 'user', content: 'one two three four five' }],
      max_tokens: 2,
    });
    expect(data.choices[0]).toMatchObject({ message: { content: 'one two' }, finish_reason: 'length' });
    expect(data.usage!.completion_tokens).toBe(2);
  });

  it('continues a server-side conversation named by X-Agentry-Conversation-Id or metadata.conversation_id', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const openai = client(key);
    const first = await openai.chat.completions
      .create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'first' }] })
      .withResponse();
    const conversationId = first.response.headers.get('x-agentry-conversation-id')!;

    const byHeader = await openai.chat.completions
      .create(
        { model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'second' }] },
        { headers: { 'X-Agentry-Conversation-Id': conversationId } },
      )
      .withResponse();
    expect(byHeader.response.headers.get('x-agentry-conversation-id')).toBe(conversationId);
    // The stored history ("first", "first") reached the model: two more prompt words than the first call.
    expect(byHeader.data.usage!.prompt_tokens).toBe(first.data.usage!.prompt_tokens + 2);

    const byMetadata = await openai.chat.completions
      .create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'third' }], metadata: { conversation_id: conversationId } })
      .withResponse();
    expect(byMetadata.response.headers.get('x-agentry-conversation-id')).toBe(conversationId);
    const messages = await messagesOf(key, conversationId);
    expect(messages.map((m) => m.content)).toEqual(['first', 'first', 'second', 'second', 'third', 'third']);

    const mismatch = await caught(
      openai.chat.completions.create(
        { model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'x' }], metadata: { conversation_id: 'another' } },
        { headers: { 'X-Agentry-Conversation-Id': conversationId } },
      ),
    );
    expect(mismatch).toBeInstanceOf(OpenAI.BadRequestError);
    expect(mismatch.param).toBe('metadata.conversation_id');
  });

  it('streams chat.completion.chunk events with the usage last, then [DONE]', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const { data: stream, response } = await client(key)
      .chat.completions.create({
        model: `agent:${agent.id}`,
        messages: [{ role: 'user', content: 'stream these four words' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    const runId = response.headers.get('x-run-id')!;
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);

    for (const chunk of chunks)
      expect(chunk).toMatchObject({ id: `chatcmpl-${runId}`, object: 'chat.completion.chunk', model: `agent:${agent.id}` });
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const content = chunks.flatMap((c) => c.choices.map((choice) => choice.delta.content ?? '')).join('');
    expect(content).toBe('stream these four words');
    expect(chunks.length).toBeGreaterThan(4);
    expect(chunks.at(-2)!.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    const { data: run } = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
    expect(last.usage).toEqual({
      prompt_tokens: run!.tokenUsage.inputTokens,
      completion_tokens: 4,
      total_tokens: run!.tokenUsage.inputTokens + 4,
    });
    expect(run).toMatchObject({ kind: 'chat_completion', status: 'completed', output: 'stream these four words' });
    // Only the last chunk carries usage.
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('writes OpenAI’s stream format: data lines only, ending with data: [DONE]', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'hi there' }], stream: true }),
    });
    const text = await res.text();
    const events = text.split('\n\n').filter(Boolean);
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events.at(-1)).toBe('data: [DONE]');
    // Without include_usage no chunk has a usage field.
    expect(events.slice(0, -1).every((e) => !('usage' in JSON.parse(e.slice(6))))).toBe(true);
  });

  it('does not expose the agent’s server-side tool calls', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const { data, response } = await client(key)
      .chat.completions.create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: '/tool skill_discover {}' }] })
      .withResponse();
    expect(data.choices[0].message).not.toHaveProperty('tool_calls');
    expect(data.choices[0].finish_reason).toBe('stop');
    const runId = response.headers.get('x-run-id')!;
    const { data: run } = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
    expect(run!.toolCalls.map((c) => c.name)).toEqual(['skill_discover']);

    // tool_choice "none": the run goes without the agent's tools.
    const without = await client(key).chat.completions.create({
      model: `agent:${agent.id}`,
      messages: [{ role: 'user', content: '/tool skill_discover {}' }],
      tool_choice: 'none',
    });
    expect(without.choices[0].message.content).toBe('no tools are available to this run');
  });
});

describe('errors in OpenAI’s shape', () => {
  it('unknown model: 404', async () => {
    const { key } = await t.tenant();
    const other = await t.agent((await t.tenant()).key, { model: 'builtin/echo' });
    for (const model of ['agent:0193a1b2-0000-7000-8000-000000000000', `agent:${other.id}`, 'gpt-4o']) {
      const err = await caught(client(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }));
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.error).toEqual({ message: `model ${model} not found`, type: 'invalid_request_error', code: 'not_found', param: null });
    }
  });

  it('paused agent: 400 agent_paused (no client retries it), not to be retried', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    await pause(key, agent.id);
    const err = await caught(
      client(key).chat.completions.create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.code).toBe('agent_paused');
    expect(err.type).toBe('invalid_request_error');
    expect(err.headers?.get('x-should-retry')).toBe('false');
  });

  it('bad key: 401', async () => {
    const err = await caught(client(`agk_${'0'.repeat(32)}_${'A'.repeat(43)}`).models.list());
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.error).toMatchObject({ type: 'authentication_error', code: 'invalid_credentials' });
  });

  it('tenant rate limit: 429 with Retry-After', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const limited = await t.key(key, ['agents:read', 'agents:write']);
    expect((await t.api(key).PUT('/api/v1/limits', { body: { rateLimitPerMinute: 1 } })).response.status).toBe(200);
    await client(limited).chat.completions.create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'hi' }] });
    const err = await caught(
      client(limited).chat.completions.create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(Number(err.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('spent budget: 429 insufficient_quota, not to be retried', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    expect((await t.api(key).PUT('/api/v1/limits', { body: { monthlyBudgetUsd: 0 } })).response.status).toBe(200);
    const err = await caught(
      client(key).chat.completions.create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.error).toMatchObject({ type: 'insufficient_quota', code: 'budget_exceeded' });
    expect(err.headers?.get('x-should-retry')).toBe('false');
    expect(Number(err.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('refuses what it cannot honour, naming the parameter: n > 1, client tools, an unknown or unusable response_format, tool results', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const model = `agent:${agent.id}`;
    const messages = [{ role: 'user' as const, content: 'hi' }];
    // Each request is made when its case is checked: one made earlier would reject with nobody awaiting it yet.
    const cases: [() => Promise<unknown>, string][] = [
      [() => client(key).chat.completions.create({ model, messages, n: 2 }), 'n'],
      [
        () =>
          client(key).chat.completions.create({ model, messages, tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] }),
        'tools',
      ],
      [
        () => client(key).chat.completions.create({ model, messages, response_format: { type: 'grammar' } as never }),
        'response_format.type',
      ],
      [
        () =>
          client(key).chat.completions.create({
            model,
            messages,
            response_format: { type: 'json_schema', json_schema: { name: 'list', schema: { type: 'array' } } },
          }),
        'response_format.json_schema.schema.type',
      ],
      [
        () => client(key).chat.completions.create({ model, messages: [...messages, { role: 'tool', tool_call_id: 'c1', content: '42' }] }),
        'messages.1',
      ],
      [
        () => client(key).chat.completions.create({ model, messages: [...messages, { role: 'assistant', content: 'hello' }] }),
        'messages.1',
      ],
      [() => client(key).chat.completions.create({ model, messages, unknown_option: true } as never), 'unknown_option'],
    ];
    for (const [request, param] of cases) {
      const err = await caught(request());
      expect(err, param).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.error, param).toMatchObject({ type: 'invalid_request_error', param });
    }
    // Nothing ran.
    expect((await runsOf(key, agent.id)).total).toBe(0);
  });

  describe('response_format', () => {
    const schema = {
      type: 'object',
      properties: { answer: { type: 'number' } },
      required: ['answer'],
      additionalProperties: false,
    };
    const jsonSchema = { type: 'json_schema' as const, json_schema: { name: 'measurement', schema } };

    it('json_schema: the content is the validated JSON, and the run keeps it as structuredOutput', async () => {
      const { key } = await t.tenant();
      const agent = await t.agent(key, { model: 'builtin/echo' });
      const completion = await client(key).chat.completions.create({
        model: `agent:${agent.id}`,
        // builtin/echo answers with the message: here a valid object, spaced as a model might.
        messages: [{ role: 'user', content: '{ "answer" : 42 }' }],
        response_format: jsonSchema,
      });
      expect(JSON.parse(completion.choices[0].message.content ?? '')).toEqual({ answer: 42 });
      expect(completion.choices[0].message.content).toBe('{"answer":42}');
      const run = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: completion.id.slice('chatcmpl-'.length) } } });
      expect(run.data!.structuredOutput).toEqual({ answer: 42 });
    });

    it('json_object: any JSON object is accepted; text that is not one fails with invalid_output', async () => {
      const { key } = await t.tenant();
      const agent = await t.agent(key, { model: 'builtin/echo' });
      const ok = await client(key).chat.completions.create({
        model: `agent:${agent.id}`,
        messages: [{ role: 'user', content: '{"city": "Lyon"}' }],
        response_format: { type: 'json_object' },
      });
      expect(JSON.parse(ok.choices[0].message.content ?? '')).toEqual({ city: 'Lyon' });

      const err = await caught(
        client(key).chat.completions.create({
          model: `agent:${agent.id}`,
          messages: [{ role: 'user', content: 'just words' }],
          response_format: { type: 'json_object' },
        }),
      );
      expect(err.status).toBe(400);
      expect(err.error).toMatchObject({ code: 'invalid_output' });
    });

    it('streamed: the validated JSON arrives whole, once, before the finish reason', async () => {
      const { key } = await t.tenant();
      const agent = await t.agent(key, { model: 'builtin/echo' });
      const stream = await client(key).chat.completions.create({
        model: `agent:${agent.id}`,
        messages: [{ role: 'user', content: '{"answer": 7}' }],
        response_format: jsonSchema,
        stream: true,
      });
      const contents: string[] = [];
      let finish: string | null = null;
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        if (choice?.delta.content) contents.push(choice.delta.content);
        if (choice?.finish_reason) finish = choice.finish_reason;
      }
      expect(contents).toEqual(['{"answer":7}']);
      expect(finish).toBe('stop');
    });
  });

  it('a message over 100,000 characters is 400 naming it, as execute caps its message; text parts count joined', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const model = `agent:${agent.id}`;
    const long = 'x'.repeat(100_001);
    const half = 'x'.repeat(50_001);
    // Made when checked, as above.
    const cases: [() => Promise<unknown>, string][] = [
      [() => client(key).chat.completions.create({ model, messages: [{ role: 'user', content: long }] }), 'messages.0.content'],
      [
        () =>
          client(key).chat.completions.create({
            model,
            messages: [
              { role: 'system', content: long },
              { role: 'user', content: 'hi' },
            ],
          }),
        'messages.0.content',
      ],
      [
        () =>
          client(key).chat.completions.create({
            model,
            messages: [
              {
                role: 'user',
                content: [
                  { type: 'text', text: half },
                  { type: 'text', text: half },
                ],
              },
            ],
          }),
        'messages.0.content',
      ],
    ];
    for (const [request, param] of cases) {
      const err = await caught(request());
      expect(err, param).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.error, param).toMatchObject({ type: 'invalid_request_error', param });
    }
    expect((await runsOf(key, agent.id)).total).toBe(0);
    // 100,000 exactly is taken.
    const ok = await client(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'y'.repeat(100_000) }] });
    expect(ok.choices[0].message.content).toContain('yyyy');
  });

  it('a failed run: 400 (no client retries it) with server_error and the run’s code, and an error event in a stream', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const err = await caught(
      client(key).chat.completions.create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: '/fail boom' }] }),
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({ type: 'server_error', code: 'model_error' });
    expect(err.headers?.get('x-should-retry')).toBe('false');

    const stream = await client(key).chat.completions.create({
      model: `agent:${agent.id}`,
      messages: [{ role: 'user', content: '/fail boom' }],
      stream: true,
    });
    const streamed = await caught(
      (async () => {
        for await (const _chunk of stream);
      })(),
    );
    expect(streamed.error).toMatchObject({ type: 'server_error', code: 'model_error' });
  });

  it('a run cancelled while it answers: the default client gets the error once and does not start another run', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    // maxRetries left at the library's default (2): it would retry a 409 or 5xx unless told not to.
    const openai = new OpenAI({ baseURL, apiKey: key });
    const pending = caught(
      openai.chat.completions.create({
        model: `agent:${agent.id}`,
        messages: [{ role: 'user', content: '/delay 200\none two three four five' }],
      }),
    );
    const runId = await vi.waitFor(
      async () => {
        const id = (await runsOf(key, agent.id)).runs[0]?.id;
        if (!id) throw new Error('no run yet');
        return id;
      },
      { timeout: 5000, interval: 20 },
    );
    const cancelled = await t.api(key).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId } } });
    expect(cancelled.response.status).toBe(200);
    const err = await pending;
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({ code: 'run_cancelled' });
    expect(err.headers?.get('x-should-retry')).toBe('false');
    // The client retries inside the call it answered: with its answer given, no retry is left to come.
    expect((await runsOf(key, agent.id)).total).toBe(1);
  });

  it('keeps problem details on the rest of the API', async () => {
    const res = await t.api('nope').GET('/api/v1/agents');
    expect(res.response.status).toBe(401);
    expect(res.response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});
