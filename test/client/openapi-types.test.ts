import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { typesOf } from '../helpers/openapi-types.js';

// The SDK's types (packages/client) are generated from the served document by test/http/openapi-types.test.ts
// (`npm run test:types` writes them there, from the app in process). This one asks as a client does, over
// HTTP from a listening server: the SDK's committed types must be those of the document a client fetches.
const generated = path.resolve(import.meta.dirname, '../../packages/client/src/generated/openapi.ts');

let t: TestApp;
beforeAll(async () => {
  t = await startApp();
});
afterAll(() => t?.close());

it('the SDK’s committed types are those of the served document', async () => {
  const base = await t.listen();
  const document = (await (await fetch(`${base}/openapi.json`)).json()) as object;
  const types = await typesOf(document);
  expect(fs.readFileSync(generated, 'utf8'), 'packages/client/src/generated/openapi.ts is stale: run npm run test:types').toBe(types);
});
