import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export interface FieldError {
  path: string;
  message: string;
}

/**
 * An error that becomes an RFC 9457 problem response. Services throw these; the error handler
 * turns them into `application/problem+json` with a stable `code`.
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
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export const badRequest = (detail: string, errors?: FieldError[], code = 'validation_failed') =>
  new ProblemError(400, code, detail, errors);
export const notFound = (resource: string) => new ProblemError(404, 'not_found', `${resource} not found`);
export const conflict = (code: string, detail: string) => new ProblemError(409, code, detail);
export const forbidden = (detail: string) => new ProblemError(403, 'forbidden', detail);
export const unauthorized = (detail: string, code = 'unauthorized') =>
  new ProblemError(401, code, detail, undefined, { 'www-authenticate': 'Bearer' });

export function problemBody(status: number, code: string, detail: string, errors?: FieldError[]) {
  return {
    type: `https://agentry.dev/problems/${code}`,
    title: TITLES[status] ?? 'Error',
    status,
    detail,
    code,
    ...(errors && errors.length ? { errors } : {}),
  };
}

export function sendProblem(reply: FastifyReply, err: ProblemError) {
  if (err.headers) reply.headers(err.headers);
  return reply
    .code(err.status)
    .type('application/problem+json')
    .send(problemBody(err.status, err.code, err.detail, err.errors));
}

/** Ajv's instancePath (`/tools/0/url`) plus the missing property, as one readable path. */
function fieldErrors(err: FastifyError): FieldError[] {
  const context = (err as { validationContext?: string }).validationContext ?? 'body';
  return (err.validation ?? []).map((v) => {
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
    if (v.keyword === 'enum' && Array.isArray(params.allowedValues)) {
      message = `must be one of: ${params.allowedValues.join(', ')}`;
    }
    return { path: where ? `${context}.${where}` : context, message };
  });
}

const DB_UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300', // too_many_connections
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);

/** True for errors that mean "the database cannot be reached right now", not a bug. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && DB_UNAVAILABLE_CODES.has(e.code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection is closed|driver has already been destroyed/i.test(message);
}

/** Maps Fastify's own errors (parsing, limits, validation) onto our problem codes. */
function fromFastifyError(err: FastifyError): ProblemError {
  if (isDatabaseUnavailable(err)) {
    return new ProblemError(503, 'database_unavailable', 'the database cannot be reached; retry shortly', undefined, { 'retry-after': '5' });
  }
  if (err.validation) {
    const errors = fieldErrors(err);
    const first = errors[0];
    return badRequest(first ? `${first.path} ${first.message}` : 'request is invalid', errors);
  }
  switch (err.code) {
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
  if (status >= 400 && status < 500) return new ProblemError(status, 'bad_request', err.message);
  return new ProblemError(500, 'internal_error', 'an internal error occurred; it has been logged');
}

/** Installs the error and not-found handlers: every error leaves as problem+json, never a stack. */
export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const problem = err instanceof ProblemError ? err : fromFastifyError(err);
    if (problem.status === 503) request.log.warn({ code: problem.code, cause: (err as Error).message }, 'request failed: database unavailable');
    // Our own 5xx problems (a model that failed, say) are expected conditions: no stack needed.
    else if (err instanceof ProblemError && problem.status >= 500) request.log.warn({ code: problem.code, detail: problem.detail }, 'request failed');
    else if (problem.status >= 500) request.log.error({ err }, 'request failed');
    else request.log.info({ code: problem.code, status: problem.status }, 'request rejected');
    return sendProblem(reply, problem);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, new ProblemError(404, 'route_not_found', `no route for ${request.method} ${request.url.split('?')[0]}`)),
  );
}
