import fs from 'node:fs';
import path from 'node:path';
import { createClient as heyApi } from '@hey-api/openapi-ts';
import createClient from 'openapi-fetch';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { typeErrors } from '../helpers/openapi-types.js';

/**
 * The served /openapi.json as third-party generators take it: openapi-typescript with openapi-fetch,
 * and @hey-api/openapi-ts. Each generates a client from the document as served (nothing corrected on
 * the way), the calls below are typechecked against it, then made: list endpoints need no page or limit.
 */

let t: TestApp;
let key: string;
let base: string;
let document: { paths: Record<string, Record<string, Operation>> };
const out = path.resolve(import.meta.dirname, '../../node_modules/.cache/openapi-generators');

interface Operation {
  operationId?: string;
  parameters?: { in: string; name: string; required?: boolean; schema?: Record<string, unknown> }[];
  requestBody?: { content: Record<string, unknown> };
}

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('generators'));
  await t.agent(key, { name: 'listed' });
  base = await t.listen();
  // The document itself is no operation of the API: raw.
  document = (await t.raw('GET', '/openapi.json')).body;
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
});
afterAll(() => t?.close());

describe('the served document', () => {
  it('declares no query parameter with a default as required, and the webhook trigger’s body', () => {
    const requiredWithDefault: string[] = [];
    let withDefault = 0;
    for (const [url, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const p of operation.parameters ?? []) {
          if (p.in !== 'query' || !p.schema || !('default' in p.schema)) continue;
          withDefault++;
          if (p.required) requiredWithDefault.push(`${method.toUpperCase()} ${url} ${p.name}`);
        }
      }
    }
    expect(withDefault).toBeGreaterThanOrEqual(30);
    expect(requiredWithDefault).toEqual([]);
    const hook = document.paths['/api/v1/hooks/{taskId}'].post;
    expect(Object.keys(hook.requestBody?.content ?? {})).toEqual(['application/json']);
  });
});

describe('openapi-typescript + openapi-fetch', () => {
  it('generates types under which a list call without page or limit typechecks, and the call answers', async () => {
    fs.writeFileSync(path.join(out, 'openapi-typescript.ts'), astToString(await openapiTS(document as unknown as OpenAPI3)));
    const caller = path.join(out, 'openapi-fetch-call.ts');
    fs.writeFileSync(
      caller,
      [
        "import createClient from 'openapi-fetch';",
        "import type { paths } from './openapi-typescript.js';",
        'export const list = (baseUrl: string, key: string) =>',
        "  createClient<paths>({ baseUrl, headers: { authorization: 'Bearer ' + key } }).GET('/api/v1/agents');",
        'export const runs = (baseUrl: string, key: string) =>',
        "  createClient<paths>({ baseUrl, headers: { authorization: 'Bearer ' + key } }).GET('/api/v1/runs', { params: { query: { status: 'completed' } } });",
        '',
      ].join('\n'),
    );
    expect(typeErrors([caller])).toEqual([]);

    const api = createClient<{ '/api/v1/agents': { get: { responses: { 200: { content: { 'application/json': unknown } } } } } }>({
      baseUrl: base,
      headers: { authorization: `Bearer ${key}` },
    });
    const { data, response } = await api.GET('/api/v1/agents');
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ total: 1, page: 1, limit: expect.any(Number) });
  });
});

describe('@hey-api/openapi-ts', () => {
  it('generates an SDK whose list operations typecheck and answer without page or limit', async () => {
    const input = path.join(out, 'openapi.json');
    fs.writeFileSync(input, JSON.stringify(document));
    const output = path.join(out, 'hey-api');
    await heyApi({ input, output, plugins: ['@hey-api/client-fetch', '@hey-api/sdk'], logs: { level: 'silent' } });
    const caller = path.join(out, 'hey-api-call.ts');
    fs.writeFileSync(
      caller,
      [
        "import { createClient } from './hey-api/client/index.js';",
        "import { listAgents, listRuns } from './hey-api/sdk.gen.js';",
        'export async function call(baseUrl: string, key: string) {',
        "  const client = createClient({ baseUrl, headers: { authorization: 'Bearer ' + key } });",
        '  const agents = await listAgents({ client });',
        '  const runs = await listRuns({ client });',
        '  return { agents: agents.data?.agents.length, total: agents.data?.total, runs: runs.data?.runs.length };',
        '}',
        '',
      ].join('\n'),
    );
    expect(typeErrors([caller])).toEqual([]);
    const { call } = await import(caller);
    expect(await call(base, key)).toEqual({ agents: 1, total: 1, runs: 0 });
  }, 60_000);
});
