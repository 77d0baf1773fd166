import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Tracing } from './tracing.js';

/**
 * A SERVER span per HTTP request, named by its route template (`POST /api/v1/agents/:agentId/execute`),
 * child of the caller's W3C `traceparent` when one is sent. Registered on the root before any route.
 *
 * The span is made active for the rest of the request: the hooks after this one run inside it, and the
 * request's and reply's event emitters are bound to it, so the handler (which Fastify calls from the
 * body's `end` event, in the socket's own async context) and the `request completed` line run inside
 * it as well. That works the same for `app.inject` as for a listening server.
 */
export function registerHttpTracing(app: FastifyInstance, tracing: Tracing) {
  const spans = new WeakMap<FastifyRequest, Span>();
  // Taken once: a request aborted and then answered (or the reverse) ends its span once.
  const take = (request: FastifyRequest) => {
    const span = spans.get(request);
    spans.delete(request);
    return span;
  };
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url;
    const parent = tracing.extract(request.headers);
    const userAgent = request.headers['user-agent'];
    const span = tracing.tracer.startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'url.path': request.url.split('?', 1)[0],
          'url.scheme': request.protocol,
          ...(route ? { 'http.route': route } : {}),
          'server.address': request.hostname,
          'client.address': request.ip,
          ...(typeof userAgent === 'string' ? { 'user_agent.original': userAgent.slice(0, 256) } : {}),
          'agentry.request.id': request.id,
        },
      },
      parent,
    );
    spans.set(request, span);
    const ctx = trace.setSpan(parent, span);
    context.bind(ctx, request.raw);
    context.bind(ctx, reply.raw);
    context.with(ctx, done);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const span = take(request);
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      // A server span is failed by a 5xx only; a 4xx is the client's (the HTTP semantic conventions).
      if (reply.statusCode >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute('error.type', String(reply.statusCode));
      }
      span.end();
    }
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    const span = take(request);
    if (span) {
      span.setAttribute('error.type', 'aborted');
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the connection' });
      span.end();
    }
    done();
  });
}
