import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { typesOf } from '../helpers/openapi-types.js';

// The SDK (packages/client) and the typed test client (test/helpers/app.ts) share one file of types,
// generated from the document the app serves; this test fails when the committed file differs from it.
// `npm run test:types` writes the file anew through this test (the only writer of it).
const generated = path.resolve(import.meta.dirname, '../../packages/client/src/generated/openapi.ts');
const write = process.env.AGENTRY_WRITE_OPENAPI_TYPES === '1';

let t: TestApp;
beforeAll(async () => {
  t = await startApp();
});
afterAll(() => t?.close());

it('the committed OpenAPI types are those of the served document', async () => {
  // The document itself is no operation of the API: raw.
  const document = (await t.raw('GET', '/openapi.json')).body;
  const types = await typesOf(document);
  if (write) fs.writeFileSync(generated, types);
  expect(fs.readFileSync(generated, 'utf8'), 'packages/client/src/generated/openapi.ts is stale: run npm run test:types').toBe(types);
});

it('the typed client calls the app in process: bodies, path parameters, problems and empty answers', async () => {
  const { key } = await t.tenant();
  const agent = await t.agent(key, { model: 'builtin/echo' });
  const { data, response } = await t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: agent.id } } });
  expect(response.status).toBe(200);
  expect(data).toEqual(agent);
  const missing = await t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: '01a00000-0000-7000-8000-000000000000' } } });
  expect(missing.response.status).toBe(404);
  expect(missing.error).toMatchObject({ status: 404, code: 'not_found' });
  const anonymous = await t.api().GET('/api/v1/agents');
  expect(anonymous.response.status).toBe(401);
  const deleted = await t.api(key).DELETE('/api/v1/agents/{id}', { params: { path: { id: agent.id } } });
  expect(deleted.response.status).toBe(204);
});
