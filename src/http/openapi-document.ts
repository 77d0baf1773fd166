import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import { OPTIONAL_BODY } from './validation.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * OpenAPI request body of a route that reads its body itself (multipart, text), so no validation
     * schema describes it: a Request Body Object, its schemas plain JSON Schema.
     */
    requestBody?: {
      description?: string;
      required?: boolean;
      content: Record<string, { schema: object; example?: unknown; encoding?: object }>;
    };
  }
}

/**
 * The OpenAPI document (GET /openapi.json) as code generators want it: @fastify/swagger builds it from the
 * route schemas, and the two hooks below add what those schemas cannot say (problem media types, shared
 * error responses, non-JSON bodies, examples). `npm run lint:openapi` lints the result. Each route names
 * its operation in `schema.operationId` (verb + noun, camelCase, unique: test/http/conventions.test.ts).
 */

const PROBLEM_MEDIA_TYPE = 'application/problem+json';
const problemContent = { [PROBLEM_MEDIA_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } };

const exampleProblem = (status: number, code: string, title: string, detail: string) => ({
  [PROBLEM_MEDIA_TYPE]: {
    schema: { $ref: '#/components/schemas/Problem' },
    example: { type: `https://agentry.dev/problems/${code}`, title, status, detail, code },
  },
});

/** The problem answers any route may give, shared by reference instead of repeated per operation. */
const SHARED_RESPONSES: Record<string, { name: string; response: JsonNode }> = {
  400: {
    name: 'BadRequest',
    response: {
      description: 'The request is invalid: `errors` lists every field that failed validation.',
      content: exampleProblem(400, 'validation_failed', 'Bad Request', 'body.name must have at least 1 character'),
    },
  },
  401: {
    name: 'Unauthenticated',
    response: {
      description: 'No credential, or one that is unknown, expired or revoked (`WWW-Authenticate: Bearer`).',
      content: exampleProblem(401, 'missing_credentials', 'Unauthorized', 'send Authorization: Bearer <api key or access token>'),
    },
  },
  403: {
    name: 'Forbidden',
    response: {
      description: 'The credential lacks the permission this operation needs.',
      content: exampleProblem(403, 'forbidden', 'Forbidden', 'this operation needs the agents:write permission'),
    },
  },
  404: {
    name: 'NotFound',
    response: {
      description: 'No such resource in the caller’s tenant.',
      content: exampleProblem(404, 'not_found', 'Not Found', 'agent not found'),
    },
  },
  429: {
    name: 'TooManyRequests',
    response: {
      description: 'The tenant’s or key’s request rate limit is reached; retry after `Retry-After` seconds.',
      headers: { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer', minimum: 0 } } },
      content: exampleProblem(429, 'rate_limited', 'Too Many Requests', 'this key may make 60 requests per minute'),
    },
  },
  default: {
    name: 'ServerError',
    response: {
      description: 'An unexpected failure (500) or a dependency that does not answer (503, with `Retry-After` when known).',
      content: exampleProblem(503, 'database_unavailable', 'Service Unavailable', 'the database does not answer'),
    },
  },
};

const SSE_EXAMPLE = [
  'event: token\ndata: {"text":"Hello"}\nid: 1\n',
  'event: done\ndata: {"conversationId":"0192f3a4-5b6c-7d8e-9f01-23456789abcd","runId":"0192f3a4-5b6c-7d8e-9f01-23456789abce","cost":0,"tokenUsage":{"inputTokens":12,"outputTokens":3}}\nid: 2\n',
].join('\n');

const CHUNK_STREAM_EXAMPLE = [
  'data: {"id":"chatcmpl-0192f3a4","object":"chat.completion.chunk","created":1795856400,"model":"agent:0192f3a4-5b6c-7d8e-9f01-23456789abcd","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}\n',
  'data: [DONE]\n',
].join('\n');

const binary = { type: 'string', format: 'binary' };

/** Successful answers that are not JSON (streams, files), by operation. */
const SUCCESS_CONTENT: Record<string, Record<string, JsonNode>> = {
  downloadFile: {
    200: {
      description: 'The file’s bytes, with the content type it was uploaded with.',
      content: { 'application/octet-stream': { schema: binary } },
    },
  },
  exportSkill: {
    200: {
      description: 'The SKILL.md (format=md) or a zip of the skill folder (format=zip).',
      content: {
        'text/markdown': { schema: { type: 'string' }, example: '---\nname: release-notes\ndescription: Writes release notes\n---\n' },
        'application/zip': { schema: binary },
      },
    },
  },
};

/** Request headers a route reads itself. */
const lastEventId = (description: string): JsonNode => ({
  name: 'Last-Event-ID',
  in: 'header',
  required: false,
  description,
  schema: { type: 'string', pattern: '^[0-9]+$' },
  example: '42',
});
const retriedStream = lastEventId(
  'On a retry with the same Idempotency-Key: the replay of the original run’s events starts after this id.',
);

const HEADERS: Record<string, JsonNode[]> = {
  getRunEvents: [lastEventId('The id of the last event the client received: the replay starts after it (same as the lastEventId query).')],
  streamAgent: [retriedStream],
  chatWithAgent: [retriedStream],
  executeAgent: [retriedStream],
};

/** A JSON object of the document or of one of its schemas, read and written by key. */
type JsonNode = { [key: string]: unknown };
const isNode = (value: unknown): value is JsonNode => typeof value === 'object' && value !== null && !Array.isArray(value);
const node = (value: unknown): JsonNode => (isNode(value) ? value : {});
const nodes = (value: unknown): JsonNode[] => (Array.isArray(value) ? value.filter(isNode) : []);
const numberOr = (value: unknown, otherwise: number) => (typeof value === 'number' ? value : otherwise);

/**
 * @fastify/swagger's two hooks: `transform` sees each route (for a public route, no security requirement;
 * the request body its config declares, by operationId), then `transformObject` the whole document (media
 * types, shared error responses, examples).
 */
export function openapiDocumentHooks(): { transform: SwaggerTransform; transformObject: SwaggerTransformObject } {
  const requestBodies = new Map<string, JsonNode>();

  const transform: SwaggerTransform = ({ schema, url, route }) => {
    const operationId = schema?.operationId;
    if (operationId && route.config?.requestBody) requestBodies.set(operationId, route.config.requestBody);
    return { url, schema: { ...schema, ...(route.config?.public ? { security: [] } : {}) } };
  };

  const transformObject: SwaggerTransformObject = (documentObject) => {
    const document: JsonNode = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject;
    document.components ??= {};
    node(document.components).responses = Object.fromEntries(Object.values(SHARED_RESPONSES).map(({ name, response }) => [name, response]));
    for (const item of Object.values(node(document.paths))) {
      for (const operation of Object.values(node(item)).filter(isNode)) finishOperation(document, operation, requestBodies);
    }
    // execute answers JSON, or the stream's events when the body asks for `stream: true`.
    const successContent = (path: string) => node(node(node(node(node(document.paths)[path]).post).responses)['200']).content;
    const stream = node(successContent('/api/v1/agents/{id}/stream'))['text/event-stream'];
    const execute = successContent('/api/v1/agents/{id}/execute');
    if (stream && isNode(execute)) execute['text/event-stream'] = stream;
    // So does the OpenAI-compatible completion, in OpenAI's chunk format (its route's description says which).
    const completion = successContent('/v1/chat/completions');
    if (isNode(completion))
      completion['text/event-stream'] = {
        schema: { type: 'string', description: 'chat.completion.chunk objects as `data:` lines, then `data: [DONE]`' },
        example: CHUNK_STREAM_EXAMPLE,
      };
    return document;
  };

  return { transform, transformObject };
}

function finishOperation(document: JsonNode, operation: JsonNode, requestBodies: Map<string, JsonNode>) {
  const id = typeof operation.operationId === 'string' ? operation.operationId : '';
  operation.responses ??= {};
  const responses = node(operation.responses);
  const errors = Object.entries(responses).filter(([status]) => Number(status) >= 400);
  // Routes that answer some errors in a format of their own (OpenAI's on /v1, JSON-RPC's on MCP) keep
  // those as declared, and get no shared problem answers they might not give.
  const ownErrorFormat = errors.some(([, response]) => !isProblem(node(response)));
  for (const [status, response] of Object.entries(responses)) {
    const code = Number(status);
    if (code >= 400 && isProblem(node(response))) responses[status] = problemResponse(node(response), status);
    else if (code >= 200 && code < 300) responses[status] = successResponse(document, node(response));
  }
  const parameters = nodes(operation.parameters);
  // A query parameter with a default may be left out: the route's querystring object lists it as
  // required (TypeBox), which would make every generated client spell out page and limit.
  for (const p of parameters) if (p.in === 'query' && 'default' in node(p.schema)) p.required = false;
  if (!ownErrorFormat) {
    const common = [
      ...(parameters.length > 0 || operation.requestBody || requestBodies.has(id) ? ['400'] : []),
      ...(nodes(operation.security).length > 0 ? ['401', '403', '429'] : []),
      ...(parameters.some((p) => p.in === 'path') ? ['404'] : []),
      'default',
    ];
    for (const status of common) responses[status] ??= sharedRef(status);
  }
  const requestBody = requestBodies.get(id);
  if (requestBody) operation.requestBody = requestBody;
  else if (operation.requestBody) finishRequestBody(document, node(operation.requestBody));
  if (SUCCESS_CONTENT[id]) Object.assign(responses, SUCCESS_CONTENT[id]);
  if (HEADERS[id]) operation.parameters = [...parameters, ...HEADERS[id]];
  for (const media of Object.values(node(node(operation.requestBody).content)).filter(isNode)) {
    if (media.example === undefined && media.examples === undefined && media.schema)
      media.example = exampleOf(document, node(media.schema));
  }
}

/**
 * A body read through its route's schema: @fastify/swagger declares every such body required, but one
 * marked OPTIONAL_BODY may be left out. A field with a default may be too (the validator fills it in),
 * though the route's object lists it as required (TypeBox) and generated clients would make callers send it.
 */
function finishRequestBody(document: JsonNode, requestBody: JsonNode) {
  const content = node(requestBody.content);
  const json = node(content['application/json']);
  if (!isNode(json.schema)) return;
  const schema = typeof json.schema.$ref === 'string' ? resolveRef(document, json.schema.$ref) : json.schema;
  if (schema[OPTIONAL_BODY] === true) requestBody.required = false;
  content['application/json'] = { ...json, schema: defaultsOptional(json.schema) };
}

/** Where the validator never fills a default in (Ajv's useDefaults skips them), so a field stays required there. */
const NO_DEFAULTS = new Set(['anyOf', 'oneOf', 'not', 'if', 'contains', 'propertyNames']);
/** Keywords whose values are data, not schemas. */
const DATA_KEYWORDS = new Set(['default', 'const', 'enum', 'examples', 'example', 'required']);
/** Keywords whose values map names to schemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs']);

/**
 * A copy of a request schema in which no object requires a property that has a default. A `$ref` to a
 * component stays as it is: answers share components (test/http/openapi-document.test.ts follows refs).
 */
function defaultsOptional(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(defaultsOptional);
  if (!isNode(schema)) return schema;
  const copy: JsonNode = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (NO_DEFAULTS.has(keyword) || DATA_KEYWORDS.has(keyword)) copy[keyword] = value;
    else if (SCHEMA_MAPS.has(keyword) && isNode(value))
      copy[keyword] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, defaultsOptional(sub)]));
    else copy[keyword] = defaultsOptional(value);
  }
  const properties = node(schema.properties);
  if (Array.isArray(schema.required)) {
    const required = schema.required.filter((name) => !('default' in node(properties[name])));
    if (required.length > 0) copy.required = required;
    else delete copy.required;
  }
  return copy;
}

const isProblem = (response: JsonNode) =>
  !response.content || node(node(node(response.content)['application/json']).schema).$ref === '#/components/schemas/Problem';

const sharedRef = (status: string) => ({ $ref: `#/components/responses/${SHARED_RESPONSES[status].name}` });

/** A problem answer: the shared one when the route says nothing of its own, else its words with the problem media type. */
function problemResponse(response: JsonNode, status: string): JsonNode {
  if (response.$ref) return response;
  const ownWords = typeof response.description === 'string' && response.description !== 'Default Response';
  if (!ownWords && SHARED_RESPONSES[status]) return sharedRef(status);
  return { ...response, description: ownWords ? response.description : `Problem ${status}`, content: problemContent };
}

/** A success answer: a schema naming its media type (SSE) is declared as that type; JSON gets an example. */
function successResponse(document: JsonNode, response: JsonNode): JsonNode {
  const json = node(node(response.content)['application/json']);
  if (!isNode(json.schema)) return response;
  const { contentMediaType, ...schema } = json.schema;
  if (contentMediaType === 'text/event-stream') {
    return { ...response, content: { [contentMediaType]: { schema, example: SSE_EXAMPLE } } };
  }
  if (json.example === undefined && json.examples === undefined) json.example = exampleOf(document, json.schema);
  return response;
}

const FORMAT_EXAMPLES: Record<string, string> = {
  'date-time': '2026-11-22T09:00:00.000Z',
  date: '2026-11-22',
  uri: 'https://agentry.example/api/v1',
  url: 'https://agentry.example/api/v1',
  email: 'ops@example.com',
  uuid: '0192f3a4-5b6c-7d8e-9f01-23456789abcd',
};

/**
 * An example value of a schema: the schema's own `examples` or `default` where it has them, else one
 * built from its parts. test/http/openapi-document.test.ts validates every example against its schema.
 */
function exampleOf(document: JsonNode, schema: JsonNode, depth = 0): unknown {
  if (depth > 12) return null;
  if (typeof schema.$ref === 'string') return exampleOf(document, resolveRef(document, schema.$ref), depth + 1);
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  for (const own of [schema.example, schema.const, schema.default]) if (own !== undefined) return own;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const alternatives = nodes(schema.anyOf ?? schema.oneOf);
  if (alternatives.length > 0) return exampleOf(document, alternatives.find((s) => s.type !== 'null') ?? alternatives[0], depth + 1);
  const parts = nodes(schema.allOf);
  if (parts.length > 0) return Object.assign({}, ...parts.map((s) => node(exampleOf(document, s, depth + 1))));
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'array':
      return Array.from({ length: Math.max(numberOr(schema.minItems, 1), 1) }, () => exampleOf(document, node(schema.items), depth + 1));
    case 'integer':
      return numberOr(schema.minimum, numberOr(schema.exclusiveMinimum, 0) + 1);
    case 'number':
      return numberOr(schema.minimum, numberOr(schema.exclusiveMinimum, 0) + 1.5);
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'string':
      return stringExample(schema);
    default:
      return Object.fromEntries(
        Object.entries(node(schema.properties)).map(([name, property]) => [name, exampleOf(document, node(property), depth + 1)]),
      );
  }
}

function stringExample(schema: JsonNode): string {
  if (typeof schema.format === 'string' && FORMAT_EXAMPLES[schema.format]) return FORMAT_EXAMPLES[schema.format];
  // An identifier fits the patterns of ids and names; a pattern it does not fit needs `examples` on its schema.
  const base = schema.pattern ? '0192f3a4-5b6c-7d8e-9f01-23456789abcd' : 'string';
  const padded = base.padEnd(numberOr(schema.minLength, 0), 'x');
  return padded.slice(0, numberOr(schema.maxLength, padded.length));
}

function resolveRef(document: JsonNode, ref: string): JsonNode {
  if (!ref.startsWith('#/')) return {};
  return ref
    .slice(2)
    .split('/')
    .reduce<JsonNode>((at, key) => node(at[key.replace(/~1/g, '/').replace(/~0/g, '~')]), document);
}
