import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute as executeAgent, type ExecuteBody } from '../helpers/execute.js';
import { anthropicStream, chatStream, responsesStream, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { readSse } from '../helpers/sse.js';

/**
 * Answers with a shape (docs/runtime.md, "Structured answers"): `responseFormat` on execute and
 * stream; the answer validated and returned as structuredOutput, one repair attempt, invalid_output
 * after it; builtin/echo instructed, the real provider packages asked natively (the requests the
 * fake vendor received carry the schema).
 */

let t: TestApp;
let key: string;
let vendor: FakeProvider;

const SCHEMA = {
  type: 'object',
  properties: { answer: { type: 'number' }, unit: { type: 'string', maxLength: 20 } },
  required: ['answer'],
  additionalProperties: false,
};
const FORMAT = { type: 'json_schema' as const, name: 'measurement', schema: SCHEMA };

beforeAll(async () => {
  vendor = await startFakeProvider();
  t = await startApp({
    OPENAI_BASE_URL: vendor.baseUrl,
    OPENAI_API_KEY: 'sk-test-openai',
    ANTHROPIC_BASE_URL: vendor.baseUrl,
    ANTHROPIC_API_KEY: 'sk-ant-test',
    OPENAI_COMPATIBLE_BASE_URL: vendor.baseUrl,
    OPENAI_COMPATIBLE_API_KEY: 'local-secret',
  });
  ({ key } = await t.tenant());
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await vendor?.close();
});
afterEach(() => {
  expect(vendor.unused()).toBe(0);
});

const execute = (agentId: string, body: ExecuteBody) => executeAgent(t.api(key), agentId, body);
const run = async (runId: string) => (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;
const runsOf = async (agentId: string) =>
  (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } })).data!.runs;

describe('structured answers with builtin/echo (instructed, then validated)', () => {
  it('returns the validated answer as structuredOutput beside the text, in the response and the run', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const res = await execute(agent.id, { message: '{"answer": 42, "unit": "m"}', responseFormat: FORMAT });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run!.structuredOutput).toEqual({ answer: 42, unit: 'm' });
    expect(res.run!.output).toBe('{"answer": 42, "unit": "m"}');
    const stored = await run(res.run!.runId);
    expect(stored.structuredOutput).toEqual({ answer: 42, unit: 'm' });
    expect(stored.steps).toHaveLength(1);
  });

  it('a run without a response format has no structuredOutput', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const res = await execute(agent.id, { message: '{"answer": 42}' });
    expect(res.response.status).toBe(200);
    expect(res.run).not.toHaveProperty('structuredOutput');
    expect((await run(res.run!.runId)).structuredOutput).toBeNull();
  });

  it('asks once for a repair, then fails the run with invalid_output', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const res = await execute(agent.id, { message: '{"answer": "forty-two"}', responseFormat: FORMAT });
    expectProblem(res, 502, 'invalid_output');
    const runs = await runsOf(agent.id);
    const stored = await run(runs[0].id);
    expect(stored.status).toBe('failed');
    expect(stored.error!.code).toBe('invalid_output');
    // The first answer, then the repair attempt (echo repeats the repair request, which is not JSON either).
    expect(stored.steps).toHaveLength(2);
    expect(stored.steps[0].text).toBe('{"answer": "forty-two"}');
    expect(stored.steps[1].text).toMatch(/^Your answer cannot be used: the answer does not match the schema: \/answer must be number/);
    expect(stored.structuredOutput).toBeNull();
  });

  it('streams the structuredOutput in the done event', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const events = await readSse(
      await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { body: { message: '{"answer": 7}', responseFormat: FORMAT } }),
    );
    const done = events.find((e) => e.event === 'done');
    expect(done?.data.structuredOutput).toEqual({ answer: 7 });
  });

  it('refuses a schema that cannot be used with a 400 naming the field', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const cases: [NonNullable<ExecuteBody['responseFormat']>, string][] = [
      [{ type: 'json_schema', schema: { type: 'array' } }, 'body.responseFormat.schema.type'],
      [{ type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'nope' } } } }, 'body.responseFormat.schema'],
      // A pattern without a maxLength could make validating a long answer slow for everyone.
      [
        { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } } } },
        'body.responseFormat.schema',
      ],
      [{ type: 'json_schema', schema: { type: 'object', description: 'x'.repeat(40_000) } }, 'body.responseFormat.schema'],
    ];
    for (const [responseFormat, field] of cases) {
      const res = await execute(agent.id, { message: '{}', responseFormat });
      expectProblem(res, 400, 'validation_failed');
      expect(JSON.stringify(res.error), JSON.stringify(responseFormat).slice(0, 100)).toContain(field);
    }
    // raw: a format type the API does not have
    const wrongType = await t.raw('POST', `/api/v1/agents/${agent.id}/execute`, {
      key,
      body: { message: '{}', responseFormat: { type: 'json_object', schema: SCHEMA } },
    });
    expect(wrongType.status).toBe(400);
    expect(JSON.stringify(wrongType.body)).toContain('responseFormat');
    // Nothing ran.
    expect(await runsOf(agent.id)).toEqual([]);
  });
});

describe('structured answers asked natively of the provider packages', () => {
  it('openai (Responses API): the request carries the json schema; a wrong answer is repaired once', async () => {
    const agent = await t.agent(key, { model: 'openai/gpt-5-mini' });
    vendor.script(
      { sse: responsesStream({ id: 'resp_1', items: [{ type: 'message', id: 'msg_1', text: ['{"answer": "lots"}'] }] }) },
      { sse: responsesStream({ id: 'resp_2', items: [{ type: 'message', id: 'msg_2', text: ['{"answer": ', '3}'] }] }) },
    );
    const res = await execute(agent.id, { message: 'how many?', responseFormat: FORMAT });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run!.structuredOutput).toEqual({ answer: 3 });
    expect(res.run!.output).toBe('{"answer": 3}');
    expect(vendor.requests).toHaveLength(2);
    for (const request of vendor.requests) {
      expect(request.body.text.format).toMatchObject({ type: 'json_schema', name: 'measurement', schema: SCHEMA });
    }
    // The repair request tells the model what was wrong, after its own answer.
    const repair = JSON.stringify(vendor.requests[1].body.input);
    expect(repair).toContain('/answer must be number');
    // Asked natively, the system prompt is not given the schema.
    expect(JSON.stringify(vendor.requests[0].body.input)).not.toContain('Answer with one JSON object');
  });

  it('openai-compatible: response_format json_schema; a second wrong answer fails the run with invalid_output', async () => {
    const agent = await t.agent(key, { model: 'openai-compatible/qwen3-8b' });
    vendor.script(
      { sse: chatStream({ text: ['not json'], finish: 'stop', usage: { prompt_tokens: 10, completion_tokens: 2 } }) },
      { sse: chatStream({ text: ['{"unit": "m"}'], finish: 'stop', usage: { prompt_tokens: 20, completion_tokens: 4 } }) },
    );
    const res = await execute(agent.id, { message: 'measure it', responseFormat: FORMAT });
    expectProblem(res, 502, 'invalid_output');
    expect(vendor.requests[0].body.response_format).toEqual({
      type: 'json_schema',
      json_schema: expect.objectContaining({ name: 'measurement', schema: SCHEMA }),
    });
    expect(vendor.requests).toHaveLength(2);
  });

  it('anthropic: the request asks for the schema natively', async () => {
    const agent = await t.agent(key, { model: 'anthropic/claude-sonnet-4-5' });
    // Claude Sonnet 4.5 takes the schema as its output format and answers in text.
    vendor.script({
      sse: anthropicStream({
        id: 'msg_1',
        blocks: [{ type: 'text', text: ['{"answer": 5}'] }],
        usage: { input_tokens: 10, output_tokens: 5 },
      }),
    });
    const res = await execute(agent.id, { message: 'count', responseFormat: FORMAT });
    expect(vendor.requests[0].body.output_config.format).toMatchObject({
      type: 'json_schema',
      schema: { properties: { answer: { type: 'number' } } },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run!.structuredOutput).toEqual({ answer: 5 });
  });
});

describe("a task's input.responseFormat", () => {
  let tasksApp: TestApp;
  let tasksKey: string;
  beforeAll(async () => {
    // Nothing dispatches by itself: the test plays the worker.
    tasksApp = await startApp({ TASK_WORKERS: '0', TASK_SCHEDULER: 'off' });
    ({ key: tasksKey } = await tasksApp.tenant());
  });
  afterAll(() => tasksApp?.close());

  type TaskInput = paths['/api/v1/tasks']['post']['requestBody']['content']['application/json'];
  const createTask = (body: TaskInput) => tasksApp.api(tasksKey).POST('/api/v1/tasks', { body });

  it('shapes the task run’s answer (and is not shown to the model as input)', async () => {
    const agent = await tasksApp.agent(tasksKey, { model: 'builtin/echo' });
    const created = await createTask({
      name: 'measure',
      description: '{"answer": 9}',
      agentId: agent.id,
      input: { responseFormat: FORMAT },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    const job = await tasksApp.services.tasks.executor.claimNext();
    expect(job).not.toBeNull();
    await tasksApp.services.tasks.executor.execute(job!);
    const api = tasksApp.api(tasksKey);
    const task = (await api.GET('/api/v1/tasks/{id}', { params: { path: { id: created.data!.id } } })).data!;
    const run = (await api.GET('/api/v1/runs/{runId}', { params: { path: { runId: task.lastRunId! } } })).data!;
    expect(run.status).toBe('completed');
    // Echo repeats what it was given: the description alone, no input appended.
    expect(run.output).toBe('{"answer": 9}');
    expect(run.structuredOutput).toEqual({ answer: 9 });
  });

  it('refuses an unusable responseFormat in the input, on create and on run now, naming the field', async () => {
    const agent = await tasksApp.agent(tasksKey, { model: 'builtin/echo' });
    const bad = await createTask({
      name: 'bad',
      description: 'x',
      agentId: agent.id,
      input: { responseFormat: { type: 'json_schema', schema: { type: 'string' } } },
    });
    expectProblem(bad, 400, 'validation_failed');
    expect(JSON.stringify(bad.error)).toContain('body.input.responseFormat.schema.type');
    const notAFormat = await createTask({ name: 'bad', description: 'x', agentId: agent.id, input: { responseFormat: 'json' } });
    expectProblem(notAFormat, 400, 'validation_failed');
    expect(JSON.stringify(notAFormat.error)).toContain('body.input.responseFormat');

    const task = await createTask({ name: 'ok', description: 'x', agentId: agent.id });
    expect(task.response.status, JSON.stringify(task.error)).toBe(201);
    const run = await tasksApp.api(tasksKey).POST('/api/v1/tasks/{id}/run', {
      params: { path: { id: task.data!.id } },
      body: { input: { responseFormat: { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'nope' } } } } } },
    });
    expectProblem(run, 400, 'validation_failed');
    expect(JSON.stringify(run.error)).toContain('body.input.responseFormat.schema');
  });
});
