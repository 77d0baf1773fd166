import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant());
});
afterAll(() => t.close());

describe('health', () => {
  it('answers liveness and readiness without credentials', async () => {
    expect((await t.api().GET('/healthz')).data).toEqual({ status: 'ok' });
    const ready = await t.api().GET('/readyz');
    expect(ready.response.status).toBe(200);
    expect(ready.data).toEqual({ status: 'ready', database: t.db.dialect });
  });

  it('reports 503 when the database is gone', async () => {
    const other = await startApp();
    await other.db.close();
    const res = await other.api().GET('/readyz');
    expectProblem(res, 503, 'database_unavailable');
    await other.app.close();
  });
});

describe('HTTP conventions', () => {
  it('answers an unknown route with a problem', async () => {
    // A route the API does not have: raw.
    const res = await t.raw('GET', '/api/v1/nothing-here', { key });
    expectProblem(res, 404, 'route_not_found');
  });

  it('echoes or assigns a request id', async () => {
    const res = await t.api().GET('/healthz', { headers: { 'x-request-id': 'abc-123' } });
    expect(res.response.headers.get('x-request-id')).toBe('abc-123');
    const res2 = await t.api().GET('/healthz');
    const res3 = await t.api().GET('/healthz');
    // Assigned ids are UUIDs (RFC 9562 layout: version and variant bits), one per request.
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    expect(res2.response.headers.get('x-request-id')).toMatch(uuid);
    expect(res3.response.headers.get('x-request-id')).toMatch(uuid);
    expect(res3.response.headers.get('x-request-id')).not.toBe(res2.response.headers.get('x-request-id'));
  });

  // Malformed, poisoned or non-JSON payloads, which the typed client cannot send: raw.
  it('rejects malformed JSON with 400 invalid_json', async () => {
    const res = await t.raw('POST', '/api/v1/agents', {
      key,
      payload: '{"name": "x", ',
      headers: { 'content-type': 'application/json' },
    });
    expectProblem(res, 400, 'invalid_json');
  });

  it('rejects prototype poisoning', async () => {
    const res = await t.raw('POST', '/api/v1/agents', {
      key,
      payload: '{"name":"x","appId":"a","__proto__":{"admin":true}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
  });

  it('rejects a body that is not JSON with 415', async () => {
    const res = await t.raw('POST', '/api/v1/agents', { key, payload: 'name=x', headers: { 'content-type': 'text/plain' } });
    expectProblem(res, 415, 'unsupported_media_type');
  });

  it('rejects bodies over 1 MiB with 413', async () => {
    const res = await t.api(key).POST('/api/v1/agents', {
      body: { name: 'big', appId: 'a', systemPrompt: 'x'.repeat(1024 * 1024 + 10) },
    });
    expectProblem(res, 413, 'payload_too_large');
  });

  it('lists every field error with its path', async () => {
    // A missing required field and an unknown one, which the types forbid: raw.
    const res = await t.raw('POST', '/api/v1/agents', { key, body: { name: '', color: 'red', configuration: { maxSteps: 0 } } });
    expectProblem(res, 400, 'validation_failed');
    const paths = res.body.errors.map((e: { path: string }) => e.path).sort();
    expect(paths).toEqual(expect.arrayContaining(['body.appId', 'body.color', 'body.name', 'body.configuration.maxSteps']));
  });

  it('validates page and limit instead of clamping them', async () => {
    const api = t.api(key);
    expectProblem(await api.GET('/api/v1/agents', { params: { query: { limit: 0 } } }), 400, 'validation_failed');
    expectProblem(await api.GET('/api/v1/agents', { params: { query: { limit: 101 } } }), 400, 'validation_failed');
    expectProblem(await api.GET('/api/v1/agents', { params: { query: { page: 0 } } }), 400, 'validation_failed');
    // A page that is not a number, which the types forbid: raw.
    expectProblem(await t.raw('GET', '/api/v1/agents?page=abc', { key }), 400, 'validation_failed');
    // A page whose offset no database takes is refused on every list, not answered with a 500.
    const page = { params: { query: { page: 1e300 } } };
    for (const list of [
      api.GET('/api/v1/agents', page),
      api.GET('/api/skills', page),
      api.GET('/api/v1/identity/tbac/policies', page),
      api.GET('/api/v1/tasks', page),
    ]) {
      expectProblem(await list, 400, 'validation_failed');
    }
    const ok = await api.GET('/api/v1/agents', { params: { query: { limit: 100, page: 3 } } });
    expect(ok.response.status).toBe(200);
    expect(ok.data).toMatchObject({ page: 3, limit: 100 });
  });

  it('accepts an empty JSON body on action routes', async () => {
    const agent = await t.agent(key, { name: 'a', appId: 'x' });
    // An empty payload declared as JSON, which the typed client does not send: raw.
    const res = await t.raw('POST', `/api/v1/agents/${agent.id}/pause`, {
      key,
      payload: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('paused');
  });
});

describe('OpenAPI', () => {
  it('documents every route with its security and schemas', async () => {
    // The document itself is no operation of the API: raw.
    const res = await t.raw('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const documented = new Set<string>();
    const operationIds = new Map<string, string>();
    for (const [p, ops] of Object.entries<Record<string, { operationId?: string }>>(res.body.paths)) {
      for (const [m, op] of Object.entries(ops)) {
        documented.add(`${m.toUpperCase()} ${p}`);
        if (op.operationId) operationIds.set(`${m.toUpperCase()} ${p}`, op.operationId);
      }
    }
    const routes = t.app.routeCatalog.filter((r) => !r.url.startsWith('/docs') && r.url !== '/openapi.json');
    expect(routes.length).toBeGreaterThan(10);
    for (const r of routes) {
      const openapiPath = r.url.replace(/:([A-Za-z]+)/g, '{$1}');
      expect(documented, `${r.method} ${r.url}`).toContain(`${r.method} ${openapiPath}`);
      // Code generators name their methods after it: a new route names it in its schema's operationId.
      expect(operationIds.get(`${r.method} ${openapiPath}`), `${r.method} ${r.url} has no operationId`).toMatch(/^[a-z][a-zA-Z0-9]+$/);
    }
    expect(new Set(operationIds.values()).size, 'operationIds are unique').toBe(operationIds.size);
    const getAgent = res.body.paths['/api/v1/agents/{id}'].get;
    expect(getAgent.security).toEqual([{ bearerAuth: [] }]);
    // A public route says so explicitly: no security requirement at all.
    expect(res.body.paths['/healthz'].get.security).toEqual([]);
  });

  it('serves the interactive page', async () => {
    const res = await t.raw('GET', '/docs/');
    expect(res.status).toBe(200);
    expect(res.text).toContain('<html');
  });
});

describe('security headers', () => {
  it('the /docs page and its assets (the console’s origin) forbid framing, sniffing and foreign scripts', async () => {
    // Pages and assets, not operations of the API: raw.
    for (const url of ['/docs', '/docs/', '/docs/static/swagger-initializer.js', '/docs/static/index.css']) {
      const res = await t.raw('GET', url);
      expect(res.status, url).toBeLessThan(400);
      const csp = String(res.headers['content-security-policy']);
      expect(csp, url).toContain("frame-ancestors 'none'");
      expect(csp, url).toContain("script-src 'self'");
      expect(csp, url).toContain("object-src 'none'");
      expect(res.headers['x-frame-options'], url).toBe('DENY');
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
    }
  });

  it('every API answer, success or problem, is nosniff', async () => {
    const missing = '00000000-0000-7000-8000-000000000000';
    for (const [url, answer, status] of [
      ['/api/v1/agents', t.api(key).GET('/api/v1/agents'), 200],
      ['/api/v1/agents', t.api().GET('/api/v1/agents'), 401],
      [`/api/v1/agents/${missing}`, t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: missing } } }), 404],
      ['/healthz', t.api().GET('/healthz'), 200],
    ] as const) {
      const { response } = await answer;
      expect(response.status, url).toBe(status);
      expect(response.headers.get('x-content-type-options'), url).toBe('nosniff');
    }
    // The document itself is no operation of the API: raw.
    const document = await t.raw('GET', '/openapi.json');
    expect(document.status, '/openapi.json').toBe(200);
    expect(document.headers['x-content-type-options'], '/openapi.json').toBe('nosniff');
  });

  it('answers carrying a new API key, webhook secret or private key are never cached', async () => {
    const api = t.api(key);
    const created = await api.POST('/api/v1/api-keys', { body: { name: 'k', permissions: ['agents:read'] } });
    expect(created.response.status).toBe(201);
    expect(created.response.headers.get('cache-control')).toBe('no-store');

    const agent = await t.agent(key, { name: 'hooked' });
    const task = await api.POST('/api/v1/tasks', {
      body: { agentId: agent.id, name: 'hook', description: 'on delivery', type: 'triggered', trigger: { type: 'webhook' } },
    });
    expect(task.response.status, JSON.stringify(task.error)).toBe(201);
    expect(task.data!.trigger).toMatchObject({ type: 'webhook', secret: expect.stringMatching(/^whsec_/) });
    expect(task.response.headers.get('cache-control')).toBe('no-store');

    const rotated = await api.POST('/api/v1/identity/agents/{agentId}/keys/rotate', { params: { path: { agentId: agent.id } } });
    expect(rotated.response.status, JSON.stringify(rotated.error)).toBe(201);
    expect(rotated.response.headers.get('cache-control')).toBe('no-store');
  });
});
