import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/json-bounds.js';
import { expectProblem, startApp, type Response, type TestApp } from '../helpers/app.js';

let t: TestApp;
let key: string;
let base: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant());
  base = await t.listen();
});
afterAll(() => t.close());

/**
 * Sends bytes as they are over a socket (no client normalises the URL or refuses the header) and
 * parses the one response the server writes before it closes the connection.
 */
async function raw(request: string): Promise<Response> {
  const { port } = new URL(base);
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.end(request));
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => (out += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(out));
  });
  const [head, ...rest] = text.split('\r\n\r\n');
  const [statusLine, ...headerLines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const body = rest.join('\r\n\r\n');
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: parsed, text: body };
}

const get = (path: string, extra = '') =>
  raw(`GET ${path} HTTP/1.1\r\nHost: agentry.test\r\nAuthorization: Bearer ${key}\r\n${extra}Connection: close\r\n\r\n`);

describe('framework errors are problems with a stable code', () => {
  it('malformed percent-encoding in a path: 400 invalid_url', async () => {
    for (const path of ['/api/v1/conversations/%E0%A4%A', '/api/v1/files/%/content']) {
      const res = await get(path);
      expectProblem(res, 400, 'invalid_url');
      expect(res.body.detail).toContain(path.split('/').pop() === 'content' ? '%' : '%E0%A4%A');
    }
  });

  it('a path parameter over the length limit: 414 uri_too_long', async () => {
    expectProblem(await get(`/api/v1/agents/${'a'.repeat(300)}`), 414, 'uri_too_long');
  });

  it('a malformed request line or header: 400 bad_request', async () => {
    expectProblem(await raw('GET /healthz HTTP/1.1\r\nHost: agentry.test\r\nBad Header Line\r\n\r\n'), 400, 'bad_request');
  });

  it('an HTTP/1.1 request without Host: 400 bad_request', async () => {
    const res = await raw('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    expectProblem(res, 400, 'bad_request');
    expect(res.body.detail).toContain('Host');
    // HTTP/1.0 has no Host header to require.
    expect((await raw('GET /healthz HTTP/1.0\r\n\r\n')).status).toBe(200);
  });

  it('headers over the size limit: 431 headers_too_large', async () => {
    expectProblem(await get('/healthz', `X-Big: ${'a'.repeat(20 * 1024)}\r\n`), 431, 'headers_too_large');
  });

  it('a request not received in time: 408 request_timeout', async () => {
    // Node reports a request whose headers or body do not arrive in time as this client error on the
    // server; it is handed to the server's handler here, on a socket that records what is written.
    let written = '';
    let destroyed = false;
    const socket = { writable: true, destroyed: false, write: (s: string) => (written += s), destroy: () => (destroyed = true) };
    t.app.server.emit('clientError', Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket);
    expect(destroyed).toBe(true);
    const [head, body] = written.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 408 /);
    expect(head.toLowerCase()).toContain('content-type: application/problem+json');
    expect(JSON.parse(body)).toMatchObject({ status: 408, code: 'request_timeout' });
  });

  // Payloads the typed client cannot send: raw.
  it('a body that is not JSON, not allowed, empty or too large', async () => {
    expectProblem(
      await t.raw('POST', '/api/v1/agents', { key, payload: '{', headers: { 'content-type': 'application/json' } }),
      400,
      'invalid_json',
    );
    expectProblem(
      await t.raw('POST', '/api/v1/agents', { key, payload: 'a', headers: { 'content-type': 'text/csv' } }),
      415,
      'unsupported_media_type',
    );
    expectProblem(
      await t.raw('POST', '/api/v1/agents', {
        key,
        payload: 'x'.repeat(2 * 1024 * 1024),
        headers: { 'content-type': 'application/json' },
      }),
      413,
      'payload_too_large',
    );
  });

  it('an unknown route: 404 route_not_found', async () => {
    expectProblem(await get('/api/v1/nothing-here'), 404, 'route_not_found');
  });
});

/** A JSON text of objects nested `depth` deep counting the outermost: `{"a":{"a":...{}}}`. */
const nested = (depth: number) => '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);

describe('JSON nesting depth', () => {
  it(`is limited to ${MAX_JSON_DEPTH} levels at parse time, on every JSON route`, async () => {
    const agent = await t.agent(key, { name: 'deep', appId: 'app' });
    // Bodies nested deeper than the types can say, as text: raw.
    const conversation = (depth: number) =>
      t.raw('POST', '/api/v1/conversations', {
        key,
        // The body is one level, metadata a second: metadata's value nests the rest.
        payload: `{"agentId":"${agent.id}","metadata":{"m":${nested(depth - 2)}}}`,
        headers: { 'content-type': 'application/json' },
      });
    const deep = await conversation(4_500);
    expectProblem(deep, 400, 'json_too_deep');
    expect(deep.body.detail).toContain(String(MAX_JSON_DEPTH));
    expectProblem(await conversation(MAX_JSON_DEPTH + 1), 400, 'json_too_deep');
    const atLimit = await conversation(MAX_JSON_DEPTH);
    expect(atLimit.status, atLimit.text).toBe(201);
    const stored = await t.api(key).GET('/api/v1/conversations/{id}', { params: { path: { id: atLimit.body.id } } });
    expect(stored.response.status).toBe(200);
    // Arrays count as levels too, and the route does not matter.
    const arrays = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1);
    expectProblem(
      await t.raw('POST', '/api/v1/tasks', { key, payload: arrays, headers: { 'content-type': 'application/json' } }),
      400,
      'json_too_deep',
    );
    // Brackets inside strings are text, not nesting.
    const inText = await t.api(key).POST('/api/v1/agents', { body: { name: '{'.repeat(150), appId: '['.repeat(100) } });
    expect(inText.response.status, JSON.stringify(inText.error)).toBe(201);
  });

  it('holds for signed webhook deliveries too', async () => {
    const agent = await t.agent(key, { name: 'hooked', appId: 'app' });
    const task = await t.api(key).POST('/api/v1/tasks', {
      body: { name: 'hook', description: 'x', agentId: agent.id, type: 'triggered', trigger: { type: 'webhook' } },
    });
    expect(task.response.status, JSON.stringify(task.error)).toBe(201);
    const { id, trigger } = task.data!;
    if (trigger?.type !== 'webhook') throw new Error(`expected a webhook trigger, got ${JSON.stringify(trigger)}`);
    const { createHmac } = await import('node:crypto');
    const body = nested(4_500);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = `sha256=${createHmac('sha256', trigger.secret!).update(`${timestamp}.${body}`).digest('hex')}`;
    // A signed payload nested deeper than the types can say, as text: raw.
    const res = await t.raw('POST', `/api/v1/hooks/${id}`, {
      payload: body,
      headers: { 'content-type': 'application/json', 'x-agentry-timestamp': timestamp, 'x-agentry-signature': signature },
    });
    expectProblem(res, 400, 'json_too_deep');
  });
});

// Each of these sends a value the types forbid (that is what is validated): raw.
describe('validation messages name the field and what was expected', () => {
  it('an enum in a body lists the allowed values once', async () => {
    const agent = await t.agent(key, { name: 'e', appId: 'app' });
    const res = await t.raw('POST', `/api/v1/agents/${agent.id}`, { key, body: { status: 'sleeping' } });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors).toEqual([{ path: 'body.status', message: 'must be one of available, paused' }]);
    expect(res.body.detail).toBe('body.status must be one of available, paused');
    // A value of the wrong type gets the same answer, not "or a string".
    const typed = await t.raw('POST', `/api/v1/agents/${agent.id}`, { key, body: { status: 5 } });
    expect(typed.body.errors).toEqual([{ path: 'body.status', message: 'must be one of available, paused' }]);
  });

  it('an enum in a query string lists the allowed values', async () => {
    const res = await t.raw('GET', '/api/v1/conversations?status=open', { key });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors).toEqual([{ path: 'querystring.status', message: expect.stringMatching(/^must be one of active, /) }]);
  });

  it('a nested enum, and a nullable field, say what they allow', async () => {
    const res = await t.raw('POST', '/api/v1/agents', {
      key,
      body: { name: 'n', appId: 'app', configuration: { onActiveRun: 'queue', temperature: 'hot' } },
    });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { path: 'body.configuration.onActiveRun', message: 'must be one of reject, enqueue, inject' },
        { path: 'body.configuration.temperature', message: 'must be a number or null' },
      ]),
    );
    expect(res.body.errors).toHaveLength(2);
  });

  it('a union of object shapes reports the errors of the shape that came closest', async () => {
    const res = await t.raw('POST', '/api/v1/agents', { key, body: { name: 'u', appId: 'app', tools: [{ type: 'mcp', url: 5 }] } });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors).toEqual([{ path: 'body.tools.0.url', message: 'must be a string' }]);
    const untagged = await t.raw('POST', '/api/v1/agents', { key, body: { name: 'u', appId: 'app', tools: [{ type: 'nope' }] } });
    expect(untagged.body.errors).toEqual([{ path: 'body.tools.0.type', message: 'must be one of builtin, mcp, agent, a2a' }]);
    const notAnObject = await t.raw('POST', '/api/v1/agents', { key, body: { name: 'u', appId: 'app', tools: ['mcp'] } });
    expect(notAnObject.body.errors).toEqual([{ path: 'body.tools.0', message: 'must be an object' }]);
    // Each item of an array is judged on its own.
    const two = await t.raw('POST', '/api/v1/agents', {
      key,
      body: { name: 'u', appId: 'app', tools: ['mcp', { type: 'mcp', url: 5 }] },
    });
    expect(two.body.errors).toEqual([
      { path: 'body.tools.0', message: 'must be an object' },
      { path: 'body.tools.1.url', message: 'must be a string' },
    ]);
  });

  it('missing, wrong type, unknown field and format', async () => {
    const res = await t.raw('POST', '/api/v1/tasks', { key, body: { name: 5, agentId: 'x', dueAt: 'tomorrow', colour: 'red' } });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { path: 'body.description', message: 'is required' },
        { path: 'body.name', message: 'must be a string' },
        { path: 'body.colour', message: 'is not a known field' },
        { path: 'body.dueAt', message: 'must match format "date-time"' },
      ]),
    );
    expect(res.body.errors).toHaveLength(4);
  });
});

describe('a known path with a method it does not answer', () => {
  // Methods the API does not have, and an unknown route: raw.
  it('answers 405 method_not_allowed with Allow', async () => {
    const cases: Array<[string, string, string[]]> = [
      ['DELETE', '/api/v1/tenant', ['GET', 'HEAD']],
      ['PUT', '/api/v1/agents', ['GET', 'HEAD', 'POST']],
      ['GET', '/api/v1/agents/01900000-0000-7000-8000-000000000000/execute', ['POST']],
      ['PATCH', '/api/v1/tasks/01900000-0000-7000-8000-000000000000/run', ['POST']],
      ['POST', '/healthz', ['GET', 'HEAD']],
    ];
    for (const [method, url, allow] of cases) {
      const res = await t.raw(method, url, { key });
      expectProblem(res, 405, 'method_not_allowed');
      expect(String(res.headers.allow).split(', ').sort(), `${method} ${url}`).toEqual(allow);
      expect(res.body.detail).toContain(method);
    }
  });

  it('an unknown path stays 404 route_not_found', async () => {
    expectProblem(await t.raw('DELETE', '/api/v1/nothing-here', { key }), 404, 'route_not_found');
  });
});

describe('OpenAPI of POST /api/v1/tasks/{id}/run', () => {
  it('says a task awaiting approval answers 409 task_awaiting_approval', async () => {
    // The document itself is no operation of the API: raw.
    const doc = (await t.raw('GET', '/openapi.json')).body;
    const op = doc.paths['/api/v1/tasks/{id}/run'].post;
    expect(op.description).toContain('task_awaiting_approval');
    expect(op.description).toMatch(/approv/);
    expect(op.responses['409']).toBeDefined();
    expect(op.responses['409'].description).toContain('task_awaiting_approval');
  });
});
