import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Response, startApp, type TestApp } from '../helpers/app.js';

// What code generators need of the served document (issue 23): named operations, the real media types
// of streams, problems and uploads, shared error answers, and examples that are true to their schemas.

/** A node of the served document, read by key. */
type Json = Response['body'];
interface Operation {
  method: string;
  path: string;
  pointer: string;
  op: Json;
}

let t: TestApp;
let doc: Json;
let operations: Operation[];

const pointerSegment = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');
const resolve = (ref: string): Json =>
  ref
    .slice(2)
    .split('/')
    .reduce<Json>((node, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
const deref = (node: Json): Json => (node.$ref ? resolve(node.$ref) : node);
const byId = (id: string) => operations.find((o) => o.op.operationId === id)!.op;

beforeAll(async () => {
  t = await startApp();
  // The document itself is no operation of the API: raw.
  doc = (await t.raw('GET', '/openapi.json')).body;
  operations = Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
    Object.entries<Json>(item).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      pointer: `#/paths/${pointerSegment(path)}/${method}`,
      op,
    })),
  );
});
afterAll(() => t?.close());

describe('OpenAPI document for code generators', () => {
  it('names every operation with a unique camelCase operationId', () => {
    const unnamed = operations.filter((o) => !o.op.operationId).map((o) => `${o.method} ${o.path}`);
    expect(unnamed).toEqual([]);
    const ids = operations.map((o) => o.op.operationId as string);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    expect(ids.filter((id) => !/^[a-z][a-zA-Z0-9]+$/.test(id))).toEqual([]);
    expect(byId('listAgents')).toBe(doc.paths['/api/v1/agents'].get);
    expect(byId('streamAgent')).toBe(doc.paths['/api/v1/agents/{id}/stream'].post);
    expect(byId('getRunEvents')).toBe(doc.paths['/api/v1/runs/{runId}/events'].get);
  });

  it('declares every operation’s security, empty on public routes', () => {
    expect(operations.filter((o) => !Array.isArray(o.op.security)).map((o) => `${o.method} ${o.path}`)).toEqual([]);
    expect(doc.paths['/healthz'].get.security).toEqual([]);
    expect(doc.paths['/api/v1/agents/{id}'].get.security).toEqual([{ bearerAuth: [] }]);
  });

  it('declares Server-Sent Events as text/event-stream, with Last-Event-ID where a replay honours it', () => {
    for (const id of ['streamAgent', 'chatWithAgent', 'getRunEvents']) {
      const content = byId(id).responses['200'].content;
      expect(Object.keys(content), id).toEqual(['text/event-stream']);
      expect(content['text/event-stream'].schema.type).toBe('string');
      expect(content['text/event-stream'].schema.description).toContain('done');
      expect(content['text/event-stream'].example).toMatch(/^event: token\ndata: .*\nid: 1\n/);
    }
    expect(Object.keys(byId('executeAgent').responses['200'].content).sort()).toEqual(['application/json', 'text/event-stream']);
    expect(Object.keys(byId('createChatCompletion').responses['200'].content).sort()).toEqual(['application/json', 'text/event-stream']);
    const header = byId('getRunEvents').parameters.find((p: Json) => p.in === 'header');
    expect(header).toMatchObject({ name: 'Last-Event-ID', required: false, schema: { type: 'string' } });
    // The replay honours it, and so does a stream retried with its Idempotency-Key.
    const withLastEventId = operations
      .filter((o) => o.op.parameters?.some((p: Json) => p.name === 'Last-Event-ID'))
      .map((o) => o.op.operationId);
    expect(withLastEventId.sort()).toEqual(['chatWithAgent', 'executeAgent', 'getRunEvents', 'streamAgent']);
  });

  it('answers every problem as application/problem+json, with the shared answers every route can give', () => {
    const wrong: string[] = [];
    let shared = 0;
    for (const { method, path, op } of operations) {
      const errors = Object.entries<Json>(op.responses).filter(([status]) => status === 'default' || Number(status) >= 400);
      for (const [status, response] of errors) {
        for (const [type, media] of Object.entries<Json>(deref(response).content ?? {})) {
          const problem = media.schema?.$ref === '#/components/schemas/Problem';
          if (problem !== (type === 'application/problem+json')) wrong.push(`${method} ${path} ${status}: ${type}`);
        }
      }
      // OAuth (RFC 6749), the MCP endpoint (JSON-RPC) and the OpenAI-compatible routes (/v1) answer some
      // errors in their own formats; every other route answers problems only.
      const ownFormat = errors.some(([, response]) =>
        Object.keys(deref(response).content ?? {}).some((type) => type !== 'application/problem+json'),
      );
      if (ownFormat) expect(path, `${method} ${path}`).toMatch(/\/oauth\/|\/mcp$|^\/v1\//);
      if (ownFormat) continue;
      shared++;
      expect(op.responses.default, `${method} ${path}`).toEqual({ $ref: '#/components/responses/ServerError' });
      if (op.security.length > 0) {
        for (const status of ['401', '403', '429']) expect(op.responses[status], `${method} ${path} ${status}`).toBeDefined();
      }
      if (op.parameters?.some((p: Json) => p.in === 'path')) expect(op.responses['404'], `${method} ${path} 404`).toBeDefined();
    }
    expect(wrong).toEqual([]);
    expect(shared).toBeGreaterThan(90);
    expect(Object.keys(doc.components.responses).sort()).toEqual([
      'BadRequest',
      'Forbidden',
      'NotFound',
      'ServerError',
      'TooManyRequests',
      'Unauthenticated',
    ]);
    // A route's own words about an error stay on that route.
    expect(doc.paths['/api/v1/tasks/{id}/run'].post.responses['409'].description).toContain('task_awaiting_approval');
  });

  it('describes the multipart bodies of file upload and skill import', () => {
    const upload = byId('uploadFile').requestBody.content['multipart/form-data'].schema;
    expect(upload).toMatchObject({ required: ['file'], properties: { file: { type: 'string', format: 'binary' } } });
    const skillImport = byId('importSkill').requestBody.content;
    expect(Object.keys(skillImport).sort()).toEqual(['application/json', 'multipart/form-data', 'text/markdown']);
    expect(skillImport['multipart/form-data'].schema.properties.file).toMatchObject({ type: 'string', format: 'binary' });
    expect(skillImport['application/json'].schema.required).toEqual(['skillMd']);
  });

  it('declares a JSON body the server lets a call leave out (x-optional-body) as not required, and every other one as required', () => {
    const leftOut = (o: Operation) => deref(o.op.requestBody?.content['application/json']?.schema ?? {})['x-optional-body'] === true;
    const withBody = operations.filter((o) => o.op.requestBody);
    expect(
      withBody
        .filter(leftOut)
        .map((o) => o.op.operationId as string)
        .sort(),
    ).toEqual(['approveApproval', 'duplicateAgent', 'runTask', 'updateTbacPolicy']);
    // The webhook trigger's body is the sender's, declared by its route: any JSON, or none.
    const notRequired = withBody.filter((o) => o.op.requestBody.required !== true).map((o) => o.op.operationId as string);
    expect(notRequired.sort()).toEqual(['approveApproval', 'duplicateAgent', 'runTask', 'triggerTaskWebhook', 'updateTbacPolicy']);
  });

  it('requires no request-body field that has a default, which the server fills in when left out', () => {
    const requiredWithDefault: string[] = [];
    let withDefault = 0;
    // Ajv's useDefaults fills a default in wherever a schema applies except under these: a field stays required there.
    const noDefaults = new Set([
      'anyOf',
      'oneOf',
      'not',
      'if',
      'contains',
      'propertyNames',
      'default',
      'const',
      'enum',
      'examples',
      'example',
    ]);
    const visit = (schema: Json, where: string, seen: Set<Json>) => {
      if (!schema || typeof schema !== 'object' || seen.has(schema)) return;
      seen.add(schema);
      if (schema.$ref) visit(resolve(schema.$ref), where, seen);
      for (const [name, property] of Object.entries<Json>(schema.properties ?? {})) {
        if (property && typeof property === 'object' && 'default' in property) {
          withDefault++;
          if (schema.required?.includes(name)) requiredWithDefault.push(`${where}.${name}`);
        }
        visit(property, `${where}.${name}`, seen);
      }
      for (const [keyword, sub] of Object.entries<Json>(schema))
        if (keyword !== 'properties' && !noDefaults.has(keyword)) visit(sub, where, seen);
    };
    for (const { method, path, op } of operations) {
      const schema = op.requestBody?.content['application/json']?.schema;
      if (schema) visit(schema, `${method} ${path} body`, new Set());
    }
    expect(withDefault).toBeGreaterThanOrEqual(10);
    expect(requiredWithDefault).toEqual([]);
    // A response field with a default stays required: the server always answers it.
    expect(doc.components.schemas.Task.properties.retryPolicy.required).toEqual(['maxAttempts', 'backoffSeconds']);
  });

  it('gives every request body and JSON success an example that its own schema accepts', () => {
    const ajv = new Ajv2020.default({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addFormat('binary', true);
    ajv.addSchema(doc, 'openapi.json');
    const missing: string[] = [];
    const invalid: string[] = [];
    let checked = 0;
    const check = (where: string, pointer: string, media: Json) => {
      if (!media.schema) return;
      if (media.example === undefined && media.examples === undefined) {
        if (!/binary/.test(JSON.stringify(media.schema))) missing.push(where);
        return;
      }
      const examples = media.example !== undefined ? [media.example] : Object.values<Json>(media.examples).map((e) => e.value);
      const validate = ajv.compile({ $ref: `openapi.json${pointer}/schema` });
      for (const example of examples) {
        checked++;
        if (!validate(example)) invalid.push(`${where}: ${ajv.errorsText(validate.errors)}`);
      }
    };
    for (const { method, path, pointer, op } of operations) {
      for (const [type, media] of Object.entries<Json>(op.requestBody?.content ?? {})) {
        check(`${method} ${path} request ${type}`, `${pointer}/requestBody/content/${pointerSegment(type)}`, media);
      }
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (!/^2/.test(status) || response.$ref) continue;
        for (const [type, media] of Object.entries<Json>(response.content ?? {})) {
          check(`${method} ${path} ${status} ${type}`, `${pointer}/responses/${status}/content/${pointerSegment(type)}`, media);
        }
      }
    }
    for (const [name, response] of Object.entries<Json>(doc.components.responses)) {
      check(
        `shared ${name}`,
        `#/components/responses/${name}/content/application~1problem+json`,
        response.content['application/problem+json'],
      );
    }
    expect(missing).toEqual([]);
    expect(invalid).toEqual([]);
    expect(checked).toBeGreaterThan(100);
  });
});
