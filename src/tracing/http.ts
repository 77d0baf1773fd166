import { type Attributes, context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bindRequestLogger } from '../http/request-logger.js';
import type { TraceContext, Tracing } from './tracing.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Traced, the request's span as the parent of what the request starts (a run); undefined untraced. */
    trace?: TraceContext;
  }
}

const SPAN = Symbol('agentry.requestSpan');
type SpanHolder = { [SPAN]?: Span };

/**
 * A SERVER span per HTTP request, named by its route template (`POST /api/v1/agents/:agentId/execute`),
 * child of the caller's W3C `traceparent` when one is sent. Registered on the root before any route.
 *
 * The span is `request.trace`, which routes pass to what the request starts (a run, a fire). With
 * OTEL_AGENTRY_DB_SPANS it is also made active for the rest of the request, for the statement spans:
 * the hooks after this one run inside it, and the request's and reply's event emitters are bound to
 * it, so the handler (which Fastify calls from the body's `end` event, in the socket's own async
 * context) runs inside it as well, for `app.inject` as for a listening server.
 */
export function registerHttpTracing(app: FastifyInstance, tracing: Tracing) {
  app.decorateRequest('trace', undefined);
  // The span on the request itself (a decorated property): a WeakMap entry per request costs the GC.
  app.decorateRequest(SPAN, undefined);
  // Taken once: a request aborted and then answered (or the reverse) ends its span once.
  const take = (request: FastifyRequest) => {
    const holder = request as unknown as SpanHolder;
    const span = holder[SPAN];
    holder[SPAN] = undefined;
    return span;
  };
  const activate = tracing.settings.dbSpans;
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url;
    const parent = tracing.extract(request.headers);
    const attributes: Attributes = {
      [ATTR_HTTP_REQUEST_METHOD]: request.method,
      [ATTR_URL_PATH]: request.url.split('?', 1)[0],
      [ATTR_URL_SCHEME]: request.protocol,
      [ATTR_SERVER_ADDRESS]: request.hostname,
      [ATTR_CLIENT_ADDRESS]: request.ip,
      'agentry.request.id': request.id,
    };
    if (route) attributes[ATTR_HTTP_ROUTE] = route;
    const userAgent = request.headers['user-agent'];
    if (typeof userAgent === 'string') attributes[ATTR_USER_AGENT_ORIGINAL] = userAgent.slice(0, 256);
    const span = tracing.tracer.startSpan(
      route ? `${request.method} ${route}` : request.method,
      { kind: SpanKind.SERVER, attributes },
      parent,
    );
    (request as unknown as SpanHolder)[SPAN] = span;
    // A client gone before the response was sent (a blocking execute given up on): no onResponse comes,
    // and Fastify's onRequestAbort only while the body is still arriving: the response's close ends the span.
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) endAborted(take(request));
    });
    const ctx = trace.setSpan(parent, span);
    request.trace = ctx;
    // The request's lines (`request completed` among them) carry its span's ids.
    const { traceId, spanId } = span.spanContext();
    request.log = reply.log = bindRequestLogger(request.log, { trace_id: traceId, span_id: spanId });
    if (!activate) return done();
    context.bind(ctx, request.raw);
    context.bind(ctx, reply.raw);
    context.with(ctx, done);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const span = take(request);
    if (span) {
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, reply.statusCode);
      // A server span is failed by a 5xx only; a 4xx is the client's (the HTTP semantic conventions).
      if (reply.statusCode >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute(ATTR_ERROR_TYPE, String(reply.statusCode));
      }
      span.end();
    }
    done();
  });
}

/** The span of a request whose connection closed before its response was sent, ended as aborted. */
function endAborted(span: Span | undefined) {
  if (!span) return;
  span.setAttribute(ATTR_ERROR_TYPE, 'aborted');
  span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the connection' });
  span.end();
}
