import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiResult, expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

/**
 * A sub-collection (or sub-resource) of a parent that does not exist, or that belongs to another
 * tenant, answers 404 not_found like the parent itself, never 200 with an empty list.
 */

type Parent = 'agent' | 'conversation' | 'task' | 'skill' | 'run' | 'file' | 'knowledgeBase';
type Api = ReturnType<TestApp['api']>;

// A later parameter (a memory block's label) gets a name that could exist.
const label = 'persona';
// Set in beforeAll: a document of the other tenant's knowledge base, so only the parent is wrong.
let knowledgeDocumentId = '';

/**
 * Every GET route whose path names a parent and goes on below it, with its typed call for a parent
 * id. `public`: an agent's identity documents are public (any relying party fetches them by URL), so
 * only an unknown agent is a 404.
 */
const SUB_ROUTES: Array<{ url: string; parent: Parent; public?: boolean; get: (api: Api, id: string) => Promise<ApiResult> }> = [
  { url: '/api/v1/agents/:id/runs', parent: 'agent', get: (api, id) => api.GET('/api/v1/agents/{id}/runs', { params: { path: { id } } }) },
  {
    url: '/api/v1/agents/:id/budget',
    parent: 'agent',
    get: (api, id) => api.GET('/api/v1/agents/{id}/budget', { params: { path: { id } } }),
  },
  {
    url: '/api/v1/agents/:id/memory',
    parent: 'agent',
    get: (api, id) => api.GET('/api/v1/agents/{id}/memory', { params: { path: { id } } }),
  },
  {
    url: '/api/v1/agents/:id/memory/:label',
    parent: 'agent',
    get: (api, id) => api.GET('/api/v1/agents/{id}/memory/{label}', { params: { path: { id, label } } }),
  },
  {
    url: '/api/v1/agents/:id/memory/:label/versions',
    parent: 'agent',
    get: (api, id) => api.GET('/api/v1/agents/{id}/memory/{label}/versions', { params: { path: { id, label } } }),
  },
  {
    url: '/api/skills/agent/:agentId',
    parent: 'agent',
    get: (api, agentId) => api.GET('/api/skills/agent/{agentId}', { params: { path: { agentId } } }),
  },
  {
    url: '/api/v1/identity/agents/:agentId/keys',
    parent: 'agent',
    get: (api, agentId) => api.GET('/api/v1/identity/agents/{agentId}/keys', { params: { path: { agentId } } }),
  },
  {
    url: '/api/v1/identity/agents/:agentId/jwks.json',
    parent: 'agent',
    public: true,
    get: (api, agentId) => api.GET('/api/v1/identity/agents/{agentId}/jwks.json', { params: { path: { agentId } } }),
  },
  {
    url: '/api/v1/identity/agents/:agentId/client-metadata.json',
    parent: 'agent',
    public: true,
    get: (api, agentId) => api.GET('/api/v1/identity/agents/{agentId}/client-metadata.json', { params: { path: { agentId } } }),
  },
  {
    url: '/api/v1/conversations/:id/messages',
    parent: 'conversation',
    get: (api, id) => api.GET('/api/v1/conversations/{id}/messages', { params: { path: { id } } }),
  },
  { url: '/api/v1/tasks/:id/runs', parent: 'task', get: (api, id) => api.GET('/api/v1/tasks/{id}/runs', { params: { path: { id } } }) },
  { url: '/api/v1/tasks/:id/fires', parent: 'task', get: (api, id) => api.GET('/api/v1/tasks/{id}/fires', { params: { path: { id } } }) },
  { url: '/api/skills/:id/agents', parent: 'skill', get: (api, id) => api.GET('/api/skills/{id}/agents', { params: { path: { id } } }) },
  { url: '/api/skills/:id/export', parent: 'skill', get: (api, id) => api.GET('/api/skills/{id}/export', { params: { path: { id } } }) },
  {
    url: '/api/v1/runs/:runId/events',
    parent: 'run',
    get: (api, runId) => api.GET('/api/v1/runs/{runId}/events', { params: { path: { runId } } }),
  },
  {
    url: '/api/v1/files/:id/content',
    parent: 'file',
    get: (api, id) => api.GET('/api/v1/files/{id}/content', { params: { path: { id } } }),
  },
  {
    url: '/api/v1/knowledge-bases/:id/documents',
    parent: 'knowledgeBase',
    get: (api, id) => api.GET('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id } } }),
  },
  {
    url: '/api/v1/knowledge-bases/:id/documents/:documentId',
    parent: 'knowledgeBase',
    get: (api, id) =>
      api.GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', { params: { path: { id, documentId: knowledgeDocumentId } } }),
  },
  {
    url: '/api/v1/knowledge-bases/:id/documents/:documentId/chunks/:position',
    parent: 'knowledgeBase',
    get: (api, id) =>
      api.GET('/api/v1/knowledge-bases/{id}/documents/{documentId}/chunks/{position}', {
        params: { path: { id, documentId: knowledgeDocumentId, position: 0 } },
      }),
  },
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
  const api = t.api(otherKey);
  const created = <T>({ data, error, response }: { data?: T; error?: unknown; response: globalThis.Response }) => {
    expect(response.status, JSON.stringify(error)).toBeLessThan(300);
    return data!;
  };
  others.agent = (await t.agent(otherKey, { name: 'theirs', appId: 'app', model: 'builtin/echo' })).id;
  const executed = await execute(api, others.agent, { message: 'hello' });
  expect(executed.response.status, JSON.stringify(executed.error)).toBe(200);
  others.run = executed.run!.runId;
  others.conversation = executed.run!.conversationId;
  others.task = created(
    await api.POST('/api/v1/tasks', { body: { name: 'theirs', description: 'later', agentId: others.agent, requiresApproval: true } }),
  ).id;
  others.skill = created(await api.POST('/api/skills', { body: { name: 'theirs-skill', description: 'd', instructions: 'i' } })).id;
  const form = new FormData();
  form.append('file', new Blob(['their notes'], { type: 'text/plain' }), 'notes.txt');
  // The generated type has the file part as a string; the form carries the file itself.
  const uploaded = await api.POST('/api/v1/files', { body: { file: 'notes.txt' }, bodySerializer: () => form });
  expect(uploaded.response.status).toBe(201);
  others.file = uploaded.data!.id;
  others.knowledgeBase = created(await api.POST('/api/v1/knowledge-bases', { body: { name: 'theirs' } })).id;
  knowledgeDocumentId = created(
    await api.POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: others.knowledgeBase } },
      body: { content: 'their notes' },
    }),
  ).id;
});
afterAll(() => t.close());

it('still lists the runs of a deleted agent (history is kept)', async () => {
  const agent = await t.agent(key, { name: 'gone', appId: 'app', model: 'builtin/echo' });
  const api = t.api(key);
  expect((await execute(api, agent.id, { message: 'hi' })).response.status).toBe(200);
  expect((await api.DELETE('/api/v1/agents/{id}', { params: { path: { id: agent.id } } })).response.status).toBe(204);
  const runs = await api.GET('/api/v1/agents/{id}/runs', { params: { path: { id: agent.id } } });
  expect(runs.response.status, JSON.stringify(runs.error)).toBe(200);
  expect(runs.data!.total).toBe(1);
});

describe('sub-collections of a missing parent', () => {
  it('the table covers every GET route that goes on below a parent id', () => {
    const nested = t.app.routeCatalog
      .filter((r) => r.method === 'GET' && /\/:[A-Za-z]+\/./.test(r.url) && !NOT_SUB_COLLECTIONS.includes(r.url))
      .map((r) => r.url);
    expect(SUB_ROUTES.map((r) => r.url)).toEqual(expect.arrayContaining(nested));
  });

  it('every such route documents its 404 in the OpenAPI document', async () => {
    // The document itself is no operation of the API: raw.
    const doc = (await t.raw('GET', '/openapi.json')).body;
    const undocumented = SUB_ROUTES.map((r) => r.url.replace(/:([A-Za-z]+)/g, '{$1}')).filter(
      (path) => !doc.paths[path]?.get?.responses?.['404'],
    );
    expect(undocumented).toEqual([]);
  });

  for (const { url, parent, public: isPublic, get } of SUB_ROUTES) {
    it(`GET ${url}: 404 for an unknown ${parent}`, async () => {
      expectProblem(await get(t.api(key), UNKNOWN_ID), 404, 'not_found');
    });

    it.skipIf(isPublic)(`GET ${url}: 404 for another tenant's ${parent}`, async () => {
      expectProblem(await get(t.api(key), others[parent]), 404, 'not_found');
    });
  }
});
