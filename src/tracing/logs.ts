import { context, trace } from '@opentelemetry/api';

const NONE = Object.freeze({});

/**
 * pino's mixin when tracing is on: a line written while a span is active (inside a traced request, a
 * run, a task job) carries that span's `trace_id` and `span_id`, so logs and traces join.
 */
export function traceLogMixin(): object {
  const span = trace.getSpanContext(context.active());
  return span ? { trace_id: span.traceId, span_id: span.spanId } : NONE;
}
