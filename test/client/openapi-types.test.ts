import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { typesOf } from '../helpers/openapi-types.js';

// The SDK's types (packages/client) are generated from the document the server serves (the app built
// from src/, so `npm run test:types` needs no build first); this fails when the committed file differs.
// `npm run test:types` writes it anew, with the test client's.
const generated = path.resolve(import.meta.dirname, '../../packages/client/src/generated/openapi.ts');
const write = process.env.AGENTRY_WRITE_OPENAPI_TYPES === '1';

let t: TestApp;
beforeAll(async () => {
  t = await startApp();
});
afterAll(() => t?.close());

it('the SDK’s committed types are those of the served document', async () => {
  const base = await t.listen();
  const document = (await (await fetch(`${base}/openapi.json`)).json()) as object;
  const types = await typesOf(document);
  if (write) fs.writeFileSync(generated, types);
  expect(fs.readFileSync(generated, 'utf8'), 'packages/client/src/generated/openapi.ts is stale: run npm run test:types').toBe(types);
});
