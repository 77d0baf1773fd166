import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

/**
 * A sub-collection (or sub-resource) of a parent that does not exist, or that belongs to another
 * tenant, answers 404 not_found like the parent itself, never 200 with an empty list.
 */

type Parent = 'agent' | 'conversation' | 'task' | 'skill' | 'run' | 'file';

/**
 * Every GET route whose path names a parent and goes on below it. `public`: an agent's identity
 * documents are public (any relying party fetches them by URL), so only an unknown agent is a 404.
 */
const SUB_ROUTES: Array<{ url: string; parent: Parent; public?: boolean }> = [
  { url: '/api/v1/agents/:id/runs', parent: 'agent' },
  { url: '/api/v1/agents/:id/budget', parent: 'agent' },
  { url: '/api/v1/agents/:id/memory', parent: 'agent' },
  { url: '/api/v1/agents/:id/memory/:label', parent: 'agent' },
  { url: '/api/v1/agents/:id/memory/:label/versions', parent: 'agent' },
  { url: '/api/skills/agent/:agentId', parent: 'agent' },
  { url: '/api/v1/identity/agents/:agentId/keys', parent: 'agent' },
  { url: '/api/v1/identity/agents/:agentId/jwks.json', parent: 'agent', public: true },
  { url: '/api/v1/identity/agents/:agentId/client-metadata.json', parent: 'agent', public: true },
  { url: '/api/v1/conversations/:id/messages', parent: 'conversation' },
  { url: '/api/v1/tasks/:id/runs', parent: 'task' },
  { url: '/api/v1/tasks/:id/fires', parent: 'task' },
  { url: '/api/skills/:id/agents', parent: 'skill' },
  { url: '/api/skills/:id/export', parent: 'skill' },
  { url: '/api/v1/runs/:runId/events', parent: 'run' },
  { url: '/api/v1/files/:id/content', parent: 'file' },
];

/**
 * The MCP endpoint answers GET with 405 for any agent: it is not a collection; its RFC 9728 metadata is
 * the same public document for every agent id (nothing is looked up, so it tells no id apart;
 * test/skills/mcp-auth.test.ts). An A2A Agent Card is a public document below a tenant and an agent,
 * not an API key's sub-collection; its 404s for an unknown agent and another tenant's are
 * test/a2a/server.test.ts's.
 */
const NOT_SUB_COLLECTIONS = [
  '/api/v1/agents/:agentId/mcp',
  '/.well-known/oauth-protected-resource/api/v1/agents/:agentId/mcp',
  '/a2a/:tenantId/agents/:agentId/.well-known/agent-card.json',
];

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

let t: TestApp;
let key: string;
const others = {} as Record<Parent, string>;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('mine'));
  const { key: otherKey } = await t.tenant('theirs');
  const post = async (url: string, body: unknown) => {
    const res = await t.request('POST', url, { key: otherKey, body });
    expect(res.status, res.text).toBeLessThan(300);
    return res.body;
  };
  others.agent = (await post('/api/v1/agents', { name: 'theirs', appId: 'app', model: 'builtin/echo' })).id;
  const executed = await post(`/api/v1/agents/${others.agent}/execute`, { message: 'hello' });
  others.run = executed.runId;
  others.conversation = executed.conversationId;
  others.task = (await post('/api/v1/tasks', { name: 'theirs', description: 'later', agentId: others.agent, requiresApproval: true })).id;
  others.skill = (await post('/api/skills', { name: 'theirs-skill', description: 'd', instructions: 'i' })).id;
  const form = new FormData();
  form.append('file', new Blob(['their notes'], { type: 'text/plain' }), 'notes.txt');
  const uploaded = await fetch(`${await t.listen()}/api/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${otherKey}` },
    body: form,
  });
  expect(uploaded.status).toBe(201);
  others.file = ((await uploaded.json()) as { id: string }).id;
});
afterAll(() => t.close());

it('still lists the runs of a deleted agent (history is kept)', async () => {
  const agent = await t.agent(key, { name: 'gone', appId: 'app', model: 'builtin/echo' });
  expect((await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: 'hi' } })).status).toBe(200);
  expect((await t.request('DELETE', `/api/v1/agents/${agent.id}`, { key })).status).toBe(204);
  const runs = await t.request('GET', `/api/v1/agents/${agent.id}/runs`, { key });
  expect(runs.status, runs.text).toBe(200);
  expect(runs.body.total).toBe(1);
});

// The parent's id first; a later parameter (a memory block's label) gets a name that could exist.
const withId = (url: string, id: string) => url.replace(/:[A-Za-z]+/, id).replace(/:[A-Za-z]+/g, 'persona');

describe('sub-collections of a missing parent', () => {
  it('the table covers every GET route that goes on below a parent id', () => {
    const nested = t.app.routeCatalog
      .filter((r) => r.method === 'GET' && /\/:[A-Za-z]+\/./.test(r.url) && !NOT_SUB_COLLECTIONS.includes(r.url))
      .map((r) => r.url);
    expect(SUB_ROUTES.map((r) => r.url)).toEqual(expect.arrayContaining(nested));
  });

  it('every such route documents its 404 in the OpenAPI document', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    const undocumented = SUB_ROUTES.map((r) => r.url.replace(/:([A-Za-z]+)/g, '{$1}')).filter(
      (path) => !doc.paths[path]?.get?.responses?.['404'],
    );
    expect(undocumented).toEqual([]);
  });

  for (const { url, parent, public: isPublic } of SUB_ROUTES) {
    it(`GET ${url}: 404 for an unknown ${parent}`, async () => {
      expectProblem(await t.request('GET', withId(url, UNKNOWN_ID), { key }), 404, 'not_found');
    });

    it.skipIf(isPublic)(`GET ${url}: 404 for another tenant's ${parent}`, async () => {
      expectProblem(await t.request('GET', withId(url, others[parent]), { key }), 404, 'not_found');
    });
  }
});
