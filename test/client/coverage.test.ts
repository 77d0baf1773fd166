import { Agentry, excludedOperations, operations } from '@agentry/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { anonymousOperations, startOperations } from '../../packages/client/src/operations.js';
import { startApp, type TestApp } from '../helpers/app.js';

// The SDK covers the API: every operation the server documents has an SDK method (the SDK's table in
// packages/client/src/operations.ts) or a documented exclusion, and the table names real methods.
type Document = { paths: Record<string, Record<string, { parameters?: { in: string; name: string }[]; security?: unknown[] }>> };

let t: TestApp;
let served: { operation: string; parameters: { in: string; name: string }[]; security: unknown[] | undefined }[];
beforeAll(async () => {
  t = await startApp();
  const document = (await (await fetch(`${await t.listen()}/openapi.json`)).json()) as Document;
  served = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([verb]) => ['get', 'put', 'post', 'delete', 'patch'].includes(verb))
      .map(([verb, op]) => ({ operation: `${verb.toUpperCase()} ${path}`, parameters: op.parameters ?? [], security: op.security })),
  );
});
afterAll(() => t?.close());

it('every operation in /openapi.json has an SDK method or a documented exclusion', () => {
  const covered = new Set<string>([...Object.values(operations), ...Object.keys(excludedOperations)]);
  expect(served.length).toBeGreaterThan(100);
  expect(served.map((s) => s.operation).filter((operation) => !covered.has(operation))).toEqual([]);
});

it('the table names only operations the server serves, each once, and methods the client has', () => {
  const documented = new Set(served.map((s) => s.operation));
  const mapped = [...Object.values(operations), ...Object.keys(excludedOperations)];
  expect(mapped.filter((operation) => !documented.has(operation))).toEqual([]);
  expect(mapped.length).toBe(new Set(mapped).size);

  const client = new Agentry({ baseUrl: 'http://127.0.0.1:1', apiKey: 'agk_unused' });
  const missing = Object.keys(operations).filter((name) => {
    const parts = name.split('.');
    const owner = parts.slice(0, -1).reduce<unknown>((o, part) => (o as Record<string, unknown> | undefined)?.[part], client);
    return typeof (owner as Record<string, unknown> | undefined)?.[parts.at(-1)!] !== 'function';
  });
  expect(missing).toEqual([]);
});

it('the operations that take an Idempotency-Key get one, and public operations are sent without a credential', () => {
  const excluded = new Set(Object.keys(excludedOperations));
  const keyed = served.filter(
    (s) => s.parameters.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key') && !excluded.has(s.operation),
  );
  expect([...startOperations].sort()).toEqual(keyed.map((s) => s.operation).sort());
  const open = served.filter((s) => s.security?.length === 0 && !excluded.has(s.operation));
  expect([...anonymousOperations].sort()).toEqual(open.map((s) => s.operation).sort());
});
