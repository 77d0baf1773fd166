import type { ErrorObject } from 'ajv';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import {
  type AnyDomainError,
  DomainError,
  type FieldError,
  isDatabaseUnavailable,
  isStorageFault,
  isTransactionConflict,
} from '../errors.js';

export { type FieldError, isDatabaseUnavailable };

/**
 * An error that becomes an RFC 9457 problem response. The HTTP layer throws these; domains throw
 * `DomainError`s (src/errors.ts), which `problemOf` maps. The error handler turns either into
 * `application/problem+json` with a stable `code`.
 */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors?: FieldError[],
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
  }
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export const badRequest = (detail: string, errors?: FieldError[], code = 'validation_failed') =>
  new ProblemError(400, code, detail, errors);
export const notFound = (resource: string) => new ProblemError(404, 'not_found', `${resource} not found`);
export const forbidden = (detail: string) => new ProblemError(403, 'forbidden', detail);
export const unauthorized = (detail: string, code = 'unauthorized') =>
  new ProblemError(401, code, detail, undefined, { 'www-authenticate': 'Bearer' });

function problemBody(status: number, code: string, detail: string, errors?: FieldError[]) {
  return {
    type: `https://agentry.dev/problems/${code}`,
    title: TITLES[status] ?? 'Error',
    status,
    detail,
    code,
    ...(errors?.length ? { errors } : {}),
  };
}

function sendProblem(reply: FastifyReply, err: ProblemError) {
  if (err.headers) reply.headers(err.headers);
  return reply
    .code(err.status)
    .type('application/problem+json')
    .send(problemBody(err.status, err.code, err.detail, err.errors));
}

/**
 * The 400 problem of a request part that failed its schema, from the validator's (Ajv's) errors: what
 * Fastify's own validation produces, for a route that validates a part itself (one body of several types).
 */
export function validationFailed(context: string, validation: ErrorObject[]): ProblemError {
  const errors = fieldErrors(context, validation);
  const first = errors[0];
  return badRequest(first ? `${first.path} ${first.message}` : 'request is invalid', errors);
}

/**
 * The field errors a 400 lists, at most: enough to fix a request by, while a body of 90,000 unknown
 * fields does not become a problem of 90,000 lines.
 */
export const MAX_FIELD_ERRORS = 20;

/** Ajv's instancePath (`/tools/0/url`) plus the missing property, as one readable path. */
function fieldErrors(context: string, validation: ErrorObject[]): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const v of collapseUnions(validation)) {
    // "must match then schema": the errors of the `then` (validation.ts, boundsFirst) say what is wrong.
    if (v.keyword === 'if') continue;
    const field = fieldError(context, v);
    const id = `${field.path}\u0000${field.message}`;
    if (!seen.has(id)) out.push(field);
    seen.add(id);
    if (out.length === MAX_FIELD_ERRORS) break;
  }
  return out;
}

function fieldError(context: string, v: ErrorObject): FieldError {
  let where = v.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const params = v.params as Record<string, unknown>;
  if (v.keyword === 'required' && typeof params.missingProperty === 'string') {
    where = where ? `${where}.${params.missingProperty}` : params.missingProperty;
    return { path: `${context}.${where}`, message: 'is required' };
  }
  if (v.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    where = where ? `${where}.${params.additionalProperty}` : params.additionalProperty;
    return { path: `${context}.${where}`, message: 'is not a known field' };
  }
  let message = v.message ?? 'is invalid';
  if (v.keyword === 'enum' && Array.isArray(params.allowedValues)) message = mustBeOneOf(params.allowedValues);
  if (v.keyword === 'const') message = `must be ${String(params.allowedValue)}`;
  if (v.keyword === 'type') message = `must be ${[params.type as string | string[]].flat().map(aType).join(' or ')}`;
  return { path: where ? `${context}.${where}` : context, message };
}

/** A JSON Schema type as a reader says it: `a string`, `an object`, `null`. */
const aType = (type: string) => (type === 'null' ? 'null' : /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

const mustBeOneOf = (values: unknown[]) =>
  values.length === 1 ? `must be ${String(values[0])}` : `must be one of ${values.map(String).join(', ')}`;

/**
 * Ajv reports a value that matches no member of a union (`anyOf`, what TypeBox makes of
 * `Union([Literal(...), ...])` and `Nullable`) as the errors of every member plus "must match a
 * schema in anyOf". Each union's errors become what a person can act on: a union of values and types
 * at one place says which it allows (`must be one of available, paused`); a union of object shapes
 * whose tag (`type`) matched none says which tags there are; otherwise the errors of the member that
 * came closest are kept (the value has its type, and fewest errors).
 *
 * Ajv pushes a union's member errors just before the union's own error, so the unions and the errors
 * inside them form a tree built in one pass; each union is then decided outermost first, over the
 * errors below it only (the work grows with the errors times the unions' nesting, never their square).
 */
function collapseUnions(errors: ErrorObject[]): ErrorObject[] {
  const roots: UnionTree[] = [];
  for (const error of errors) {
    let children: UnionTree[] = [];
    if (isUnion(error)) {
      let first = roots.length;
      while (first > 0 && isWithin(roots[first - 1].error, error)) first--;
      children = roots.splice(first);
    }
    roots.push({ error, children });
  }
  return roots.flatMap(decide);
}

/** An error and, for a union's, the errors of its members (in Ajv's order). */
interface UnionTree {
  error: ErrorObject;
  children: UnionTree[];
}

/** The same union schema is met at every item of an array: its errors are those at or below its value. */
const isWithin = (e: ErrorObject, union: ErrorObject) =>
  e.schemaPath.startsWith(`${union.schemaPath}/`) &&
  (e.instancePath === union.instancePath || e.instancePath.startsWith(`${union.instancePath}/`));

const flatten = (trees: UnionTree[]): ErrorObject[] => trees.flatMap((t) => [...flatten(t.children), t.error]);

function decide(tree: UnionTree): ErrorObject[] {
  const union = tree.error;
  if (!isUnion(union)) return [union];
  const prefix = `${union.schemaPath}/`;
  const inside = flatten(tree.children);
  const leaves = inside.filter((e) => !isUnion(e));
  if (leaves.length && leaves.every((e) => e.instancePath === union.instancePath && ['const', 'enum', 'type'].includes(e.keyword))) {
    return [{ ...union, keyword: COLLAPSED, message: allowedByUnion(leaves, prefix), params: {} }];
  }
  const memberOf = (e: ErrorObject) => e.schemaPath.slice(prefix.length).split('/')[0];
  const members = new Map<string, ErrorObject[]>();
  for (const e of inside) {
    const member = memberOf(e);
    const list = members.get(member);
    if (list) list.push(e);
    else members.set(member, [e]);
  }
  const discriminator = sharedValueError([...members.values()]);
  if (discriminator) {
    // No member's tag (`type`) matched: what the tag may be is the one thing to say.
    const tags = inside.filter((e) => e.instancePath === discriminator && (e.keyword === 'const' || e.keyword === 'enum'));
    return [{ ...tags[0], keyword: COLLAPSED, message: allowedByUnion(tags, prefix), params: {} }];
  }
  // A member whose type the value has (its errors lie deeper) beats one that refuses the value's type.
  const rank = (member: ErrorObject[]) =>
    (member.some((e) => e.keyword === 'type' && e.instancePath === union.instancePath) ? 1e6 : 0) +
    member.filter((e) => !isUnion(e)).length;
  let closest: string | undefined;
  let best = Number.POSITIVE_INFINITY;
  for (const [member, memberErrors] of members) {
    const r = rank(memberErrors);
    if (r < best) [closest, best] = [member, r];
  }
  if (closest === undefined) return [union];
  // Unions inside the member kept are decided in turn.
  return tree.children.filter((c) => memberOf(c.error) === closest).flatMap(decide);
}

/** The field below the union at which every member refuses the value (a const or enum tag), if any. */
function sharedValueError(members: ErrorObject[][]): string | undefined {
  const tagPaths = members.map((m) => new Set(m.filter((e) => e.keyword === 'const' || e.keyword === 'enum').map((e) => e.instancePath)));
  return [...(tagPaths[0] ?? [])].find((path) => tagPaths.every((paths) => paths.has(path)));
}

/** The keyword of an error made from a union's errors; its message is final. */
const COLLAPSED = 'x-union';

const isUnion = (e: ErrorObject) => e.keyword === 'anyOf' || e.keyword === 'oneOf';

/**
 * "must be one of a, b" for the values a union's members allow, with "or null", "or a string" for
 * members that ask for a type only. A member that names values (a Literal is a type and a value)
 * contributes those values, not its type.
 */
function allowedByUnion(leaves: ErrorObject[], prefix: string): string {
  const members = new Map<string, ErrorObject[]>();
  for (const e of leaves) {
    const member = e.schemaPath.startsWith(prefix) ? e.schemaPath.slice(prefix.length).split('/')[0] : e.schemaPath;
    const list = members.get(member);
    if (list) list.push(e);
    else members.set(member, [e]);
  }
  const values = new Set<unknown>();
  const types = new Set<string>();
  for (const errors of members.values()) {
    const named = errors.flatMap((e) => {
      const params = e.params as Record<string, unknown>;
      if (e.keyword === 'const') return [params.allowedValue];
      return e.keyword === 'enum' ? (params.allowedValues as unknown[]) : [];
    });
    if (named.length) for (const v of named) values.add(v);
    else
      for (const e of errors)
        if (e.keyword === 'type') for (const t of [(e.params as { type: string | string[] }).type].flat()) types.add(t);
  }
  if (!types.size) return mustBeOneOf([...values]);
  const alternatives = [...values].map(String).concat([...types].map(aType));
  if (alternatives.length === 1) return `must be ${alternatives[0]}`;
  const last = alternatives.pop();
  return `must be ${values.size > 1 ? 'one of ' : ''}${alternatives.join(', ')} or ${last}`;
}

/** The one place a domain error becomes a problem: its status and headers are decided here. */
export function problemOf(err: DomainError): ProblemError {
  const e = err as AnyDomainError;
  const retryAfter = (seconds?: number) => (seconds === undefined ? undefined : { 'retry-after': String(seconds) });
  switch (e.kind) {
    case 'invalid_input':
      return new ProblemError(400, e.code, e.detail, e.errors);
    case 'unauthenticated':
      return new ProblemError(401, e.code, e.detail, undefined, { 'www-authenticate': e.scheme });
    case 'budget_exceeded':
      return new ProblemError(402, e.code, e.detail);
    case 'forbidden':
      return new ProblemError(403, e.code, e.detail);
    case 'not_found':
      return new ProblemError(404, e.code, e.detail);
    case 'conflict':
      return new ProblemError(409, e.code, e.detail);
    case 'unprocessable':
      return new ProblemError(422, e.code, e.detail);
    case 'limit_exceeded':
      return new ProblemError(429, e.code, e.detail, undefined, retryAfter(e.retryAfterSeconds));
    case 'run_failed':
      return new ProblemError(502, e.code, e.detail);
    case 'unavailable':
      return new ProblemError(503, e.code, e.detail, undefined, retryAfter(e.retryAfterSeconds));
    default: {
      const unmapped: never = e;
      throw new Error(`no problem is mapped for ${(unmapped as DomainError).constructor.name}`);
    }
  }
}

/** Seconds a client is told to wait after a storage fault: an operator has to free space or repair the disk. */
const STORAGE_RETRY_SECONDS = 30;

/** The database cannot write (disk full, EIO, read-only storage): the same problem for /readyz and every route. */
export function storageUnavailable(): ProblemError {
  return new ProblemError(
    503,
    'storage_unavailable',
    'the database cannot write (its disk is full, failing or read-only); nothing was changed; retry later',
    undefined,
    { 'retry-after': String(STORAGE_RETRY_SECONDS) },
  );
}

/** Maps Fastify's own errors (parsing, limits, validation) onto our problem codes. */
function fromFastifyError(err: FastifyError): ProblemError {
  if (isStorageFault(err)) return storageUnavailable();
  if (isTransactionConflict(err)) {
    return new ProblemError(
      503,
      'transaction_conflict',
      'the database aborted this request’s transaction for meeting another one (a deadlock); what it was writing was not written; retry',
      undefined,
      { 'retry-after': '1' },
    );
  }
  if (isDatabaseUnavailable(err)) {
    return new ProblemError(503, 'database_unavailable', 'the database cannot be reached; retry shortly', undefined, {
      'retry-after': '5',
    });
  }
  if (err.validation) {
    return validationFailed((err as { validationContext?: string }).validationContext ?? 'body', err.validation as ErrorObject[]);
  }
  switch (err.code) {
    case 'FST_ERR_BAD_URL':
      return badRequest(`the URL is not valid: ${err.message}`, undefined, 'invalid_url');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ProblemError(414, 'uri_too_long', 'a path segment of the URL is longer than the 200 characters allowed');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ProblemError(413, 'payload_too_large', 'request body exceeds the 1 MiB limit');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ProblemError(415, 'unsupported_media_type', 'send the body as application/json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return badRequest('content-length does not match the body', undefined, 'invalid_body');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return badRequest('the JSON body is empty', undefined, 'invalid_json');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return badRequest('the body is not valid JSON', undefined, 'invalid_json');
  }
  // PostgreSQL data exceptions (class 22: a NUL byte in text, a value out of range...) are bad input.
  if (typeof err.code === 'string' && /^22[0-9A-Z]{3}$/.test(err.code) && !err.statusCode) {
    return badRequest('the request holds a value the database cannot store', undefined, 'invalid_value');
  }
  if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_CONTENT_TYPE') {
    return badRequest('the body could not be parsed', undefined, 'invalid_json');
  }
  const status = err.statusCode ?? 500;
  if (status === 413) return new ProblemError(413, 'payload_too_large', 'request body is too large');
  if (status === 415) return new ProblemError(415, 'unsupported_media_type', 'send the body as application/json');
  if (status >= 400 && status < 500) return new ProblemError(status, CLIENT_ERROR_CODES[status] ?? 'bad_request', err.message);
  return new ProblemError(500, 'internal_error', 'an internal error occurred; it has been logged');
}

/** Stable codes for the client-error statuses that framework and plugin errors carry. */
const CLIENT_ERROR_CODES: Record<number, string> = {
  400: 'bad_request',
  404: 'not_found',
  406: 'not_acceptable',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  431: 'headers_too_large',
};

/**
 * Errors Fastify raises before a request reaches any route or hook (a path whose percent-encoding is
 * broken, a path parameter over the length limit): the `frameworkErrors` option sends them here.
 */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const problem = fromFastifyError(err);
  request.log.info({ code: problem.code, status: problem.status }, 'request rejected');
  return sendProblem(reply, problem);
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (malformed request line or header,
 * headers over the size limit, a request not received in time): the `clientErrorHandler` option.
 * Only the socket is left, so the problem is written on it as a whole response.
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket) {
  // A reset connection has no one left to answer (https://nodejs.org/api/http.html#event-clienterror).
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const problem =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ProblemError(408, 'request_timeout', 'the request was not received in time')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new ProblemError(431, 'headers_too_large', 'the request headers are larger than the server accepts')
        : new ProblemError(400, 'bad_request', 'the request is not valid HTTP/1.1');
  this.log.debug({ code: problem.code, cause: err.code }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(problemBody(problem.status, problem.code, problem.detail));
    socket.write(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/** Installs the error and not-found handlers: every error leaves as problem+json, never a stack. */
export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const expected = err instanceof ProblemError || err instanceof DomainError;
    const problem = err instanceof ProblemError ? err : err instanceof DomainError ? problemOf(err) : fromFastifyError(err);
    // Named by its code (`request failed: transaction conflict`): a 503 is not always the database's absence.
    if (problem.status === 503)
      request.log.warn(
        { code: problem.code, cause: (err as Error).message, dbCode: (err as { code?: unknown }).code },
        `request failed: ${problem.code.replaceAll('_', ' ')}`,
      );
    // Our own 5xx problems (a model that failed, say) are expected conditions: no stack needed.
    else if (expected && problem.status >= 500) request.log.warn({ code: problem.code, detail: problem.detail }, 'request failed');
    else if (problem.status >= 500) request.log.error({ err }, 'request failed');
    else request.log.info({ code: problem.code, status: problem.status }, 'request rejected');
    return sendProblem(reply, problem);
  });
  // RFC 9112 3.2: an HTTP/1.1 request without Host is a 400. Node would answer it with an empty body,
  // so it lets such requests through (http.requireHostHeader: false, in app.ts) and they end here.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      return done(new ProblemError(400, 'bad_request', 'an HTTP/1.1 request needs a Host header'));
    }
    done();
  });

  // A path that some route answers, with a method none does, is a 405 naming the methods it takes.
  const methods = new Set<string>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) methods.add(method);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const allowed = [...methods]
      .filter((method) => method !== request.method && app.findRoute({ method: method as 'GET', url: path }))
      .sort();
    if (allowed.length) {
      const allow = allowed.join(', ');
      return sendProblem(
        reply,
        new ProblemError(405, 'method_not_allowed', `${request.method} is not allowed on ${path}; use ${allow}`, undefined, { allow }),
      );
    }
    return sendProblem(reply, new ProblemError(404, 'route_not_found', `no route for ${request.method} ${path}`));
  });
}
