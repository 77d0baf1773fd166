import fs from 'node:fs';
import path from 'node:path';
import { Agentry } from '@agentry/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { typeErrors } from '../helpers/openapi-types.js';

// What the SDK's types (generated from the served document, built into packages/client/dist) make a
// caller send is what the server needs, no more: a body it lets a call leave out is optional.
// The calls below are typechecked as an SDK user's code, then made.
let t: TestApp;
let key: string;
let client: Agentry;
const out = path.resolve(import.meta.dirname, '../../node_modules/.cache/client-request-bodies');

beforeAll(async () => {
  t = await startApp();
  key = (await t.tenant()).key;
  client = new Agentry({ baseUrl: await t.listen(), apiKey: key });
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
});
afterAll(() => t?.close());

/** TypeScript's diagnostics for an SDK user's module of these lines. */
function typeErrorsOf(lines: string[]): string[] {
  const file = path.join(out, `${expect.getState().currentTestName?.replace(/\W+/g, '-')}.ts`);
  fs.writeFileSync(
    file,
    [`import type { Agentry } from '@agentry/client';`, 'declare const client: Agentry;', 'declare const id: string;', ...lines, ''].join(
      '\n',
    ),
  );
  return typeErrors([file]);
}

it('types a body the server lets a call leave out as optional, in client.api and the resource methods', async () => {
  expect(
    typeErrorsOf([
      "export const approve = client.api.POST('/api/v1/approvals/{id}/approve', { params: { path: { id } } });",
      "export const duplicate = client.api.POST('/api/v1/agents/{id}/duplicate', { params: { path: { id } } });",
      "export const run = client.api.POST('/api/v1/tasks/{id}/run', { params: { path: { id } } });",
      "export const patch = client.api.PATCH('/api/v1/identity/tbac/policies/{id}', { params: { path: { id } } });",
      'export const methods = [client.approvals.approve(id), client.agents.duplicate(id), client.tasks.run(id)];',
      '// A body the server needs stays required.',
      '// @ts-expect-error',
      "export const reject = client.api.POST('/api/v1/approvals/{id}/reject', { params: { path: { id } } });",
    ]),
  ).toEqual([]);

  // And the server takes those calls without a body.
  const agent = await client.agents.create({ name: 'Original', appId: 'request-bodies', model: 'builtin/echo' });
  expect(await client.agents.duplicate(agent.id)).toMatchObject({ name: 'Original (copy)' });
  const task = await client.tasks.create({
    name: 'Yearly',
    description: 'say hi',
    agentId: agent.id,
    type: 'scheduled',
    schedule: '0 0 1 1 *',
  });
  const started = await client.api.POST('/api/v1/tasks/{id}/run', { params: { path: { id: task.id } } });
  expect(started.response.status).toBe(202);
  expect(started.data).toMatchObject({ taskId: task.id, runId: expect.any(String) });
});

it('types a request field with a default as optional, and the same field of an answer as always present', async () => {
  expect(
    typeErrorsOf([
      "import type { Task } from '@agentry/client';",
      "export const svid = client.identity.svid(id, { audience: 'https://agentry.test' });",
      "export const raw = client.api.POST('/api/v1/identity/agents/{agentId}/svid', { params: { path: { agentId: id } }, body: { audience: 'x' } });",
      "export const task = client.tasks.create({ name: 'n', description: 'd', agentId: id, type: 'scheduled', schedule: '0 0 1 1 *', retryPolicy: {} });",
      'declare const created: Task;',
      'export const attempts: number = created.retryPolicy.maxAttempts;',
    ]),
  ).toEqual([]);

  // Left out, the server's default applies: an SVID for an hour.
  const agent = await client.agents.create({ name: 'Identified', appId: 'request-bodies', model: 'builtin/echo' });
  const before = Date.now();
  const { expiresAt } = await client.identity.svid(agent.id, { audience: 'https://agentry.test' });
  expect(Date.parse(expiresAt) - before).toBeGreaterThan(3590_000);
  expect(Date.parse(expiresAt) - before).toBeLessThanOrEqual(3601_000);
});
