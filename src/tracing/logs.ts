import { context, trace } from '@opentelemetry/api';

/**
 * pino's mixin when tracing is on: a line written while a span is active (inside a traced request, a
 * run, a task job) carries that span's `trace_id` and `span_id`, so logs and traces join.
 */
export function traceLogMixin(): object {
  const span = trace.getSpanContext(context.active());
  // A new object each time: pino merges the line's own fields into what the mixin returns.
  return span ? { trace_id: span.traceId, span_id: span.spanId } : {};
}
