import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerEnv, startAimock, VENDOR_MODELS } from '../helpers/aimock.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { type FakeProvider, responsesStream, startFakeProvider } from '../helpers/fake-provider.js';
import { readSse } from '../helpers/sse.js';

/**
 * An answer the model did not end itself (docs/runtime.md, "Structured answers" and "Why a run
 * stopped"): cut off at the output limit, a structured answer is repaired once and otherwise fails
 * `invalid_output`, never `completed` without its object; a plain answer stays, its run's
 * `finishReason` and a warning saying it was cut. Through aimock, per vendor API.
 */

let mock: LLMock;
let t: TestApp;
let key: string;

beforeAll(async () => {
  mock = await startAimock();
  t = await startApp(providerEnv(mock));
  ({ key } = await t.tenant());
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});

const responseFormat = {
  type: 'json_schema' as const,
  name: 'city',
  schema: {
    type: 'object',
    properties: { city: { type: 'string' }, population: { type: 'integer' } },
    required: ['city', 'population'],
    additionalProperties: false,
  },
};
const getRun = (app: TestApp, k: string, runId: string) => app.api(k).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });

const REPAIR = 'Your answer cannot be used';
/** aimock's requests as text, to tell a test's first request from its repair. */
const has = (req: unknown, text: string) => JSON.stringify(req).includes(text);

// aimock answers a Responses API `length` with status incomplete but no incomplete_details, which the
// OpenAI API always sends with it (the provider reads the reason there): that API is below, scripted.
describe.each(VENDOR_MODELS.filter((v) => v.model !== 'openai/gpt-5-mini'))('$model', ({ model }) => {
  it('a structured answer cut off at the output limit, twice: the run fails invalid_output, saying so', async () => {
    const token = `twice-cut ${model}`;
    mock.addFixture({
      match: { predicate: (req) => has(req, token) },
      response: { content: '{"city":"Lisbon","popul', finishReason: 'length' },
    });
    const a = await t.agent(key, { model });
    const res = await execute(t.api(key), a.id, { message: token, responseFormat, maxTokens: 8 });
    expect(res.response.status, JSON.stringify(res.data)).toBe(502);
    expect(res.error!.code).toBe('invalid_output');
    expect(res.error!.detail).toContain('cut off at the output limit of 8 tokens');
    const run = (await getRun(t, key, res.response.headers.get('x-run-id')!)).data!;
    expect(run).toMatchObject({ status: 'failed', finishReason: 'length', structuredOutput: null, error: { code: 'invalid_output' } });
    // The repair asked for a shorter answer.
    expect(mock.getRequests().filter((r) => has(r.body, token) && has(r.body, REPAIR))).toHaveLength(1);
  });

  it('a structured answer cut off once, then answered whole: completed with its object and finishReason stop', async () => {
    const token = `cut-once ${model}`;
    mock.addFixture({
      match: { predicate: (req) => has(req, token) && has(req, REPAIR) },
      response: { content: '{"city":"Lisbon","population":545000}' },
    });
    mock.addFixture({
      match: { predicate: (req) => has(req, token) },
      response: { content: '{"city":"Lisbon","popul', finishReason: 'length' },
    });
    const a = await t.agent(key, { model });
    const res = await execute(t.api(key), a.id, { message: token, responseFormat });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run).toMatchObject({ structuredOutput: { city: 'Lisbon', population: 545000 }, finishReason: 'stop' });
  });

  it('a plain answer cut off at the output limit: completed, but its finishReason and a warning say so', async () => {
    const token = `plain-cut ${model}`;
    mock.addFixture({
      match: { predicate: (req) => has(req, token) },
      response: { content: 'The answer begins and then', finishReason: 'length' },
    });
    const a = await t.agent(key, { model });
    const events = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: token } }));
    const done = events.at(-1)!;
    expect(done).toMatchObject({ event: 'done', data: { finishReason: 'length' } });
    const run = (await getRun(t, key, done.data.runId)).data!;
    expect(run).toMatchObject({ status: 'completed', finishReason: 'length', output: 'The answer begins and then' });
    expect(run.warnings).toContain('the answer was cut off at the output limit: it may be incomplete');
  });
});

it('a normal answer: finishReason stop; a run that ran out of steps: max_steps', async () => {
  const a = await t.agent(key, { model: 'builtin/echo', configuration: { maxSteps: 1 } });
  const plain = await execute(t.api(key), a.id, { message: 'hello there' });
  expect(plain.response.status, JSON.stringify(plain.error)).toBe(200);
  expect(plain.run!.finishReason).toBe('stop');
  const looping = await execute(t.api(key), a.id, { message: '/tool memory_list {}' });
  expect(looping.response.status, JSON.stringify(looping.error)).toBe(200);
  const run = (await getRun(t, key, looping.run!.runId)).data!;
  expect(run.finishReason).toBe('max_steps');
});

describe('openai/gpt-5-mini (Responses API, incomplete: max_output_tokens)', () => {
  let vendor: FakeProvider;
  let own: TestApp;
  let ownKey: string;
  beforeAll(async () => {
    vendor = await startFakeProvider();
    own = await startApp({ OPENAI_BASE_URL: vendor.baseUrl, OPENAI_API_KEY: 'sk-test' });
    ({ key: ownKey } = await own.tenant());
  });
  afterAll(async () => {
    await own?.close();
    await vendor?.close();
  });
  const cut = (id: string, text: string) => ({
    sse: responsesStream({ id, items: [{ type: 'message', id: `m-${id}`, text: [text] }], incomplete: 'max_output_tokens' }),
  });

  it('a structured answer cut off twice fails invalid_output; a plain one completes with finishReason length', async () => {
    const a = await own.agent(ownKey, { model: 'openai/gpt-5-mini' });
    vendor.script(cut('r1', '{"city":"Lis'), cut('r2', '{"city":"Lisbon","pop'));
    const res = await execute(own.api(ownKey), a.id, { message: 'city?', responseFormat });
    expect(res.response.status, JSON.stringify(res.data)).toBe(502);
    expect(res.error).toMatchObject({ code: 'invalid_output', detail: expect.stringContaining('cut off at the output limit') });
    expect(vendor.requests).toHaveLength(2);

    vendor.script(cut('r3', 'The answer begins'));
    const plain = await execute(own.api(ownKey), a.id, { message: 'tell me' });
    expect(plain.response.status, JSON.stringify(plain.error)).toBe(200);
    expect(plain.run).toMatchObject({ output: 'The answer begins', finishReason: 'length' });
    expect(vendor.unused()).toBe(0);
  });
});
