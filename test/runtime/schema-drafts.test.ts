import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { invalidToolInput } from '../../src/runtime/tools/input-schema.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute as executeAgent } from '../helpers/execute.js';

/**
 * JSON Schema drafts (docs/runtime.md, "Structured answers"): a schema's `$schema` names draft-07,
 * 2019-09 or 2020-12 and it is compiled as that draft, in every place a schema is taken: execute's
 * `responseFormat`, `/v1/chat/completions`' `response_format`, a task's input and tool input schemas.
 * Without `$schema`, a response format is draft-07 and a tool input schema 2020-12. Zod 4's
 * `toJSONSchema` writes 2020-12 (`prefixItems` for a tuple), which was refused before.
 */

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant());
});
afterAll(() => t?.close());

const Place = z.object({
  city: z.string().max(40),
  coords: z.tuple([z.number(), z.number()]),
  tags: z.array(z.string().max(10)).max(5),
});
const zodSchema = z.toJSONSchema(Place) as Record<string, unknown>;

const execute = (agentId: string, message: string, schema: Record<string, unknown>) =>
  executeAgent(t.api(key), agentId, { message, responseFormat: { type: 'json_schema', schema } });

describe('responseFormat', () => {
  it('takes a schema made by Zod 4 (2020-12) and validates the answer as 2020-12 (prefixItems)', async () => {
    expect(zodSchema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(JSON.stringify(zodSchema)).toContain('prefixItems');
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const ok = await execute(agent.id, '{"city":"Lisbon","coords":[38.7,-9.1],"tags":["sea"]}', zodSchema);
    expect(ok.response.status, JSON.stringify(ok.error)).toBe(200);
    expect(ok.run!.structuredOutput).toEqual(Place.parse({ city: 'Lisbon', coords: [38.7, -9.1], tags: ['sea'] }));
    // A tuple of the wrong types is wrong under 2020-12 (draft-07 would ignore prefixItems): repaired once, then invalid_output.
    const wrong = await execute(agent.id, '{"city":"Lisbon","coords":["north",1],"tags":[]}', zodSchema);
    expectProblem(wrong, 502, 'invalid_output');
    // Echo repeats what it is told: its second answer is the repair request, naming what was wrong.
    const runId = wrong.response.headers.get('x-run-id')!;
    const run = (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;
    expect(run.steps[1].text).toContain('the answer does not match the schema: /coords/0 must be number');
  });

  it('validates 2019-09 (dependentRequired) and draft-07 (a tuple as items: [...]) by their $schema', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const draft2019 = {
      $schema: 'https://json-schema.org/draft/2019-09/schema',
      type: 'object',
      properties: { card: { type: 'string', maxLength: 20 }, expiry: { type: 'string', maxLength: 5 } },
      dependentRequired: { card: ['expiry'] },
    };
    expect((await execute(agent.id, '{"card":"4111","expiry":"12/30"}', draft2019)).response.status).toBe(200);
    expectProblem(await execute(agent.id, '{"card":"4111"}', draft2019), 502, 'invalid_output');

    const draft07 = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { pair: { type: 'array', items: [{ type: 'number' }, { type: 'string', maxLength: 9 }] } },
    };
    expect((await execute(agent.id, '{"pair":[1,"one"]}', draft07)).response.status).toBe(200);
    expectProblem(await execute(agent.id, '{"pair":["one",1]}', draft07), 502, 'invalid_output');
  });

  it('refuses a $schema naming another dialect, and an unsafe pattern under a 2020-12 keyword, naming the field', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const other = await execute(agent.id, '{}', { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' });
    expectProblem(other, 400, 'validation_failed');
    expect(JSON.stringify(other.error)).toContain('body.responseFormat.schema.$schema');
    // The secure rules (a pattern needs a maxLength) reach subschemas only 2019-09 and 2020-12 have.
    const hidden = await execute(agent.id, '{}', {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { word: { type: 'string', pattern: '^(a|aa)+$' } },
      properties: { w: { $ref: '#/$defs/word' } },
    });
    expectProblem(hidden, 400, 'validation_failed');
    expect(JSON.stringify(hidden.error)).toContain('body.responseFormat.schema.$defs.word');
  });

  it('a task takes a 2020-12 schema in its input', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const task = await t.api(key).POST('/api/v1/tasks', {
      body: {
        name: 'place',
        description: '{"city":"Porto","coords":[41.1,-8.6],"tags":[]}',
        agentId: agent.id,
        input: { responseFormat: { type: 'json_schema', schema: zodSchema } },
      },
    });
    expect(task.response.status, JSON.stringify(task.error)).toBe(201);
  });
});

describe('/v1/chat/completions response_format', () => {
  it('openai’s client sends a Zod 4 schema (2020-12) as json_schema: the answer is the validated object', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const client = new OpenAI({ baseURL: `${await t.listen()}/v1`, apiKey: key, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: `agent:${agent.id}`,
      messages: [{ role: 'user', content: '{"city":"Faro","coords":[37,-7.9],"tags":["sun"]}' }],
      response_format: { type: 'json_schema', json_schema: { name: 'place', schema: zodSchema } },
    });
    expect(JSON.parse(completion.choices[0].message.content!)).toEqual({ city: 'Faro', coords: [37, -7.9], tags: ['sun'] });
  });
});

describe('LangChain’s withStructuredOutput against /v1/chat/completions', () => {
  it('sends its Zod 4 schema as a json_schema response_format and gets the validated object back', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const sent: string[] = [];
    const fetch: typeof globalThis.fetch = async (url, init) => {
      sent.push(String(init?.body));
      return globalThis.fetch(url, init);
    };
    const model = new ChatOpenAI({
      model: `agent:${agent.id}`,
      apiKey: key,
      maxRetries: 0,
      configuration: { baseURL: `${await t.listen()}/v1`, fetch },
    });
    const structured = model.withStructuredOutput(Place, { method: 'jsonSchema', name: 'place' });
    const place = await structured.invoke('{"city":"Braga","coords":[41.5,-8.4],"tags":["old"]}');
    expect(place).toEqual({ city: 'Braga', coords: [41.5, -8.4], tags: ['old'] });
    // What LangChain sent: its schema names draft 2020-12.
    expect(JSON.parse(sent[0]).response_format.json_schema.schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
  });
});

describe('tool input schemas', () => {
  const tool = (inputSchema: Record<string, unknown>) => ({ name: 'pairs', inputSchema });
  it('are compiled as the draft their $schema names (2020-12 without one)', () => {
    const draft07 = tool({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { pair: { type: 'array', items: [{ type: 'number' }, { type: 'string' }] } },
    });
    expect(invalidToolInput(draft07, { pair: [1, 'a'] })).toBeUndefined();
    expect(invalidToolInput(draft07, { pair: ['a', 1] })).toMatch(/^Invalid input for tool pairs: pair\[0\] must be number/);
    const draft2020 = tool({ type: 'object', properties: { pair: { type: 'array', prefixItems: [{ type: 'number' }] } } });
    expect(invalidToolInput(draft2020, { pair: ['a'] })).toMatch(/pair\[0\] must be number/);
    expect(invalidToolInput(tool({ $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }), {})).toMatch(
      /its input schema is unusable \(its \$schema names no JSON Schema draft taken here/,
    );
  });
});
