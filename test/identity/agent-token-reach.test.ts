import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { ASSERTION_TYPE, postToken } from './helpers.js';

/**
 * Issue 21 item 8: an agent's own access token (client_credentials with its private key) reaches
 * only what that agent needs: itself, its runs, its conversations, its skills, its MCP endpoint and
 * its SVIDs (for delegation through token exchange). This walks every route of the app with such a
 * token: the routes listed below answer for the agent's own resources and 404 for another agent's;
 * every other route answers 403 (or 404), whatever it is given.
 */

/** The routes an agent's own token reaches (for its own resources only). */
const ALLOWED = new Set([
  'GET /api/v1/tenant',
  'GET /api/v1/agents/:id',
  'POST /api/v1/agents/:id/execute',
  'POST /api/v1/agents/:id/chat',
  'POST /api/v1/agents/:id/stream',
  'GET /api/v1/agents/:id/runs',
  'GET /api/v1/runs/:runId',
  'POST /api/v1/runs/:runId/cancel',
  'GET /api/v1/runs/:runId/events',
  'GET /api/v1/conversations',
  'GET /api/v1/conversations/:id',
  'GET /api/v1/conversations/:id/messages',
  'POST /api/v1/conversations/:id/messages',
  'GET /api/skills/agent/:agentId',
  'POST /api/v1/agents/:agentId/mcp',
  'GET /api/v1/agents/:agentId/mcp',
  'DELETE /api/v1/agents/:agentId/mcp',
  'POST /api/v1/identity/agents/:agentId/svid',
  'GET /api/v1/identity/agents/:agentId/keys',
  // The OpenAI-compatible endpoint: the agent lists and calls itself as a model, as it executes itself.
  'GET /v1/models',
  'GET /v1/models/:model',
  'POST /v1/chat/completions',
]);

/** Bodies for the allowed routes, so that they pass validation and reach their checks (a function: the body names whose resource). */
const BODIES: Record<string, unknown> = {
  'POST /v1/chat/completions': (whose: Owned) => ({ model: `agent:${whose.agentId}`, messages: [{ role: 'user', content: 'hello' }] }),
  'POST /api/v1/agents/:id/execute': { message: 'hello' },
  'POST /api/v1/agents/:id/chat': { message: 'hello' },
  'POST /api/v1/agents/:id/stream': { message: 'hello' },
  'POST /api/v1/conversations/:id/messages': { content: 'hello again' },
  'POST /api/v1/agents/:agentId/mcp': { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
  'POST /api/v1/identity/agents/:agentId/svid': { audience: 'http://agentry.test' },
};

let t: TestApp;
let admin: string;
let token: string;
interface Owned {
  agentId: string;
  conversationId: string;
  runId: string;
}
let self: Owned;
let other: Owned;
const shared: Record<string, string> = {};

async function agentWithHistory(name: string): Promise<Owned> {
  const agent = await t.agent(admin, { name, appId: 'app' });
  const run = await execute(t, admin, agent.id, { message: `hi ${name}` });
  expect(run.response.status, JSON.stringify(run.error)).toBe(200);
  return { agentId: agent.id, conversationId: run.data!.conversationId, runId: run.data!.runId };
}

beforeAll(async () => {
  t = await startApp();
  const tenant = await t.tenant('acme');
  admin = tenant.key;
  self = await agentWithHistory('Self');
  other = await agentWithHistory('Other');
  const api = t.api(admin);
  const skill = await api.POST('/api/skills', {
    body: { name: 'pricing', description: 'prices', category: 'sales', instructions: 'Quote.' },
  });
  shared.skill = skill.data!.id;
  for (const agentId of [self.agentId, other.agentId]) {
    const assigned = await api.POST('/api/skills/{id}/assign', { params: { path: { id: shared.skill } }, body: { agentId } });
    expect(assigned.response.status).toBe(201);
  }
  const task = await api.POST('/api/v1/tasks', { body: { name: 'report', description: 'write it', agentId: other.agentId } });
  expect(task.response.status, JSON.stringify(task.error)).toBe(201);
  shared.task = task.data!.id;
  const policy = await api.POST('/api/v1/identity/tbac/policies', { body: { callerAgentId: '*', calleeAgentId: '*', toolName: 'x' } });
  shared.policy = policy.data!.id;
  shared.apiKey = (await api.GET('/api/v1/tenant')).data!.credential.id!;
  const keys = await api.GET('/api/v1/identity/agents/{agentId}/keys', { params: { path: { agentId: other.agentId } } });
  shared.kid = keys.data!.keys[0]?.kid ?? 'kid';

  const assertion = await t.services.identity.signClientAssertion(tenant.id, self.agentId);
  const res = await postToken(t, {
    grant_type: 'client_credentials',
    client_assertion_type: ASSERTION_TYPE,
    client_assertion: assertion,
    scope: 'agents:read agents:write skills:read',
  });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  token = res.data!.access_token;
});
afterAll(() => t.close());

/** The route's URL with its parameters naming `whose` resources (or the tenant's shared ones). */
function urlFor(route: string, whose: Owned): string {
  return route.replace(/:(\w+)/g, (_m, name: string) => {
    if (name === 'agentId') return whose.agentId;
    if (name === 'runId') return whose.runId;
    if (name === 'model') return `agent:${whose.agentId}`;
    if (name === 'keyId') return shared.kid;
    if (name === 'taskId') return shared.task;
    if (route.startsWith('/api/v1/agents/')) return whose.agentId;
    if (route.startsWith('/api/v1/conversations/')) return whose.conversationId;
    if (route.startsWith('/api/v1/tasks/')) return shared.task;
    if (route.startsWith('/api/skills/store/')) return 'store-entry';
    if (route.startsWith('/api/skills/')) return shared.skill;
    if (route.startsWith('/api/v1/api-keys/')) return shared.apiKey;
    if (route.startsWith('/api/v1/connectors/')) return 'slack';
    if (route.startsWith('/api/v1/identity/tbac/policies/')) return shared.policy;
    return '01a00000-0000-7000-8000-000000000000';
  });
}

/** Any route of the catalog, called generically: untyped. */
function call(method: string, route: string, whose: Owned) {
  const key = `${method} ${route}`;
  const given = BODIES[key];
  const body = method === 'GET' || method === 'DELETE' ? undefined : typeof given === 'function' ? given(whose) : (given ?? {});
  const headers = route.endsWith('/mcp') ? { accept: 'application/json, text/event-stream' } : undefined;
  return t.raw(method, urlFor(route, whose), { key: token, body, headers });
}

describe("an agent's own access token", () => {
  it("walks every route: the listed ones reach only the agent's own resources, the rest are refused", async () => {
    const catalog = (t.app as unknown as { routeCatalog: { method: string; url: string; public: boolean }[] }).routeCatalog.filter(
      (r) => !r.public,
    );
    expect(catalog.length).toBeGreaterThan(80);
    const routes = new Set(catalog.map((r) => `${r.method} ${r.url}`));
    for (const allowed of ALLOWED) expect(routes.has(allowed), `${allowed} is a route`).toBe(true);

    const wrong: string[] = [];
    for (const { method, url } of catalog) {
      const key = `${method} ${url}`;
      // Routes without parameters name no agent's resources (the conversation list is checked below),
      // unless their body does (a chat completion's model).
      const foreign = url.includes(':') || typeof BODIES[key] === 'function' ? await call(method, url, other) : { status: 403, text: '' };
      if (![403, 404].includes(foreign.status))
        wrong.push(`${key} with another agent's resources: ${foreign.status} ${foreign.text.slice(0, 160)}`);
      const own = await call(method, url, self);
      if (ALLOWED.has(key)) {
        if ([401, 403, 404].includes(own.status) || own.status >= 500)
          wrong.push(`${key} with its own resources: ${own.status} ${own.text.slice(0, 160)}`);
      } else if (![403, 404].includes(own.status)) {
        wrong.push(`${key} (not for agents) with its own resources: ${own.status} ${own.text.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('lists only its own conversations and runs itself', async () => {
    const api = t.api(token);
    const list = await api.GET('/api/v1/conversations', { params: { query: { agentId: other.agentId } } });
    expect(list.response.status).toBe(200);
    expect(list.data!.conversations.map((c) => c.agentId)).not.toContain(other.agentId);
    const all = await api.GET('/api/v1/conversations');
    expect(all.data!.conversations.length).toBeGreaterThan(0);
    expect(new Set(all.data!.conversations.map((c) => c.agentId))).toEqual(new Set([self.agentId]));

    const run = await execute(t, token, self.agentId, { message: 'from myself' });
    expect(run.response.status, JSON.stringify(run.error)).toBe(200);
    expect(run.data!.output).toContain('from myself');
    const refused = await api.GET('/api/v1/agents');
    expect(refused.response.status).toBe(403);
    // As an OpenAI-compatible client it sees one model: itself.
    const models = await api.GET('/v1/models');
    expect(models.response.status, JSON.stringify(models.error)).toBe(200);
    expect(models.data!.data.map((m) => m.id)).toEqual([`agent:${self.agentId}`]);
    expect(refused.error!.code).toBe('forbidden');
    expect(refused.error!.detail).toMatch(/agent's own access token/);
  });

  it("replaying another agent's message by its Idempotency-Key is 404, as posting to it is", async () => {
    const send = (key: string) =>
      t.api(key).POST('/api/v1/conversations/{id}/messages', {
        params: { path: { id: other.conversationId } },
        body: { content: 'once only' },
        headers: { 'idempotency-key': `replay-other-${other.conversationId}` },
      });
    const first = await send(admin);
    expect(first.response.status, JSON.stringify(first.error)).toBe(200);
    const replay = await send(token);
    expect(replay.response.status, JSON.stringify(replay.data)).toBe(404);
    expect(replay.error!.code).toBe('not_found');
    expect(replay.response.headers.get('idempotent-replayed')).toBeNull();
  });
});
