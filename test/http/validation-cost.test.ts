import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FIELD_ERRORS } from '../../src/http/errors.js';
import { expectProblem, startApp, startProcess, type TestApp, type TestProcess } from '../helpers/app.js';

/**
 * The work of refusing a body is bounded by the schema, not by what the client sends (issue 33, item 2):
 * an array past its maxItems is refused without its items being checked one by one, at most
 * MAX_FIELD_ERRORS field errors are kept, and the errors of unions are collapsed in one pass. Each body
 * here is as large as the 1 MiB limit allows; before the fix the first one kept the event loop busy for
 * minutes.
 */
const LIMIT = 1024 * 1024;

/** A JSON body of `head` plus as many copies of `item` in `field` as fit in 1 MiB. */
function fill(head: Record<string, unknown>, field: string, item: string): string {
  const start = JSON.stringify({ ...head, [field]: [] }).slice(0, -2);
  const count = Math.floor((LIMIT - start.length - 2) / (item.length + 1));
  const body = `${start}${Array.from({ length: count }, () => item).join(',')}]}`;
  expect(body.length).toBeLessThanOrEqual(LIMIT);
  expect(body.length).toBeGreaterThan(LIMIT - item.length - 2);
  return body;
}

/** An object whose unknown fields fill 1 MiB: every one an error under allErrors. */
function unknownFields(head: Record<string, unknown>): string {
  const start = JSON.stringify(head).slice(0, -1);
  const fields: string[] = [];
  let length = start.length + 1;
  for (let i = 0; length + 12 < LIMIT; i++) {
    const f = `"u${i}":0`;
    fields.push(f);
    length += f.length + 1;
  }
  return `${start},${fields.join(',')}}`;
}

const INVALID_TOOL = '{"type":"mcp","url":1,"x":[1]}';
const bodies = (agentId: string) => [
  {
    name: 'create with 1 MiB of invalid tools',
    method: 'POST',
    url: '/api/v1/agents',
    payload: fill({ name: 'n', appId: 'a', systemPrompt: 's' }, 'tools', INVALID_TOOL),
    field: 'body.tools',
    message: 'must NOT have more than 64 items',
  },
  {
    name: 'update with 1 MiB of invalid tools',
    method: 'POST',
    url: `/api/v1/agents/${agentId}`,
    payload: fill({}, 'tools', INVALID_TOOL),
    field: 'body.tools',
    message: 'must NOT have more than 64 items',
  },
  {
    name: 'create with 1 MiB of invalid tools and another field wrong before them',
    method: 'POST',
    url: '/api/v1/agents',
    payload: fill({ name: 1, appId: 'a', systemPrompt: 's' }, 'tools', INVALID_TOOL),
    field: 'body.name',
    message: 'must be a string',
  },
  {
    name: 'create with 1 MiB of unknown fields',
    method: 'POST',
    url: '/api/v1/agents',
    payload: unknownFields({ name: 'n', appId: 'a', systemPrompt: 's' }),
    field: 'body.u0',
    message: 'is not a known field',
  },
  {
    name: 'create with 64 tools, each of them wrong in every member of the union',
    method: 'POST',
    url: '/api/v1/agents',
    payload: JSON.stringify({ name: 'n', appId: 'a', systemPrompt: 's', tools: Array.from({ length: 64 }, () => ({ url: 1, x: 1 })) }),
    field: 'body.tools.0.type',
    message: 'is required',
  },
];

describe('refusing a body costs work bounded by its schema', () => {
  let t: TestApp;
  let key: string;
  let agentId: string;
  beforeAll(async () => {
    t = await startApp();
    ({ key } = await t.tenant());
    agentId = (await t.agent(key)).id;
  });
  afterAll(() => t.close());

  it('names the field, and keeps at most MAX_FIELD_ERRORS errors', async () => {
    for (const b of bodies(agentId)) {
      const res = await t.raw(b.method, b.url, { key, payload: b.payload, headers: { 'content-type': 'application/json' } });
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors.length, b.name).toBeLessThanOrEqual(MAX_FIELD_ERRORS);
      expect(res.body.errors[0], b.name).toEqual({ path: b.field, message: expect.stringContaining(b.message) });
      expect(res.body.detail, b.name).toBe(`${b.field} ${res.body.errors[0].message}`);
    }
  });
});

describe('a real server answers /healthz while it refuses the largest bodies', () => {
  let p: TestProcess;
  let key: string;
  let agentId: string;
  beforeAll(async () => {
    p = await startProcess({ RATE_LIMIT_PER_MINUTE: '0' });
    const { cli } = await import('../helpers/process.js');
    const created = await cli(['tenants', 'create', 'cost'], p.database.env);
    key = created.stdout.match(/agk_\S+/)![0];
    const agent = await fetch(`${p.url}/api/v1/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'n', appId: 'a', systemPrompt: 's' }),
    });
    agentId = ((await agent.json()) as { id: string }).id;
  }, 60_000);
  afterAll(() => p?.close());

  it('each refusal leaves the event loop free: /healthz answers during and after', async () => {
    for (const b of bodies(agentId)) {
      let done = false;
      const refused = fetch(`${p.url}${b.url}`, {
        method: b.method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: b.payload,
      }).finally(() => (done = true));
      // A blocked loop answers nothing: the probe times out (the bound is generous, not a measure).
      let probes = 0;
      while (!done || probes === 0) {
        const health = await fetch(`${p.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
        expect(health.status, b.name).toBe(200);
        probes++;
      }
      const res = await refused;
      expect(res.status, b.name).toBe(400);
      expect(((await res.json()) as { errors: unknown[] }).errors.length).toBeLessThanOrEqual(MAX_FIELD_ERRORS);
    }
    expect((await fetch(`${p.url}/healthz`)).status).toBe(200);
  }, 120_000);
});
