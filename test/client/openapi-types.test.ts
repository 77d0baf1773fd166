import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startProcess, type TestProcess } from '../helpers/app.js';
import { typesOf } from '../helpers/openapi-types.js';

// The SDK's types (packages/client) are generated from the document the running server serves;
// this fails when the committed file differs. `npm run test:types` writes it anew.
const generated = path.resolve(import.meta.dirname, '../../packages/client/src/generated/openapi.ts');
const write = process.env.AGENTRY_WRITE_OPENAPI_TYPES === '1';

let proc: TestProcess;
beforeAll(async () => {
  proc = await startProcess({ LOG_LEVEL: 'silent' });
});
afterAll(() => proc?.close());

it('the SDK’s committed types are those of the running server’s document', async () => {
  const document = (await (await fetch(`${proc.url}/openapi.json`)).json()) as object;
  const types = await typesOf(document);
  if (write) fs.writeFileSync(generated, types);
  expect(fs.readFileSync(generated, 'utf8'), 'packages/client/src/generated/openapi.ts is stale: run npm run test:types').toBe(types);
});
