import fs from 'node:fs';
import path from 'node:path';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

// The typed test client (test/helpers/app.ts) is only as true as these types: they are generated from
// the document the app serves, and this test fails when the committed file differs from it.
// `npm run test:types` writes the file anew.
const generated = path.resolve(import.meta.dirname, '../generated/openapi.ts');
const write = process.env.AGENTRY_WRITE_OPENAPI_TYPES === '1';

let t: TestApp;
beforeAll(async () => {
  t = await startApp();
});
afterAll(() => t?.close());

it('the committed OpenAPI types are those of the served document', async () => {
  const document = (await t.request('GET', '/openapi.json')).body;
  const types = COMMENT_HEADER + astToString(await openapiTS(document));
  if (write) fs.writeFileSync(generated, types);
  expect(fs.readFileSync(generated, 'utf8'), 'test/generated/openapi.ts is stale: run npm run test:types').toBe(types);
});
