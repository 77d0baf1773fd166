import type { Span, SpanContext } from '@opentelemetry/api';

/**
 * The spans of runs and task jobs under way in this process, by the id their log lines carry (`runId`,
 * `jobId`). No context follows the awaits (tracing.ts), so a line is matched to its span by that id.
 */
const spansOfWork = new Map<string, SpanContext>();

/** Lines naming `id` (as `runId` or `jobId`) carry `span`'s ids until the returned function is called. */
export function logUnder(id: string, span: Span): () => void {
  spansOfWork.set(id, span.spanContext());
  return () => void spansOfWork.delete(id);
}

const spanOf = (id: unknown) => (typeof id === 'string' ? spansOfWork.get(id) : undefined);

/**
 * pino's mixin when tracing is on: a line about a run or a task job under way here carries its span's
 * `trace_id` and `span_id`, so logs and traces join; a request's lines carry its span through the
 * request's logger (http.ts).
 */
export function traceLogMixin(fields: object): object {
  const named = fields as { runId?: unknown; jobId?: unknown };
  const span = spanOf(named.runId) ?? spanOf(named.jobId);
  // A new object each time: pino merges the line's own fields into what the mixin returns.
  return span ? { trace_id: span.traceId, span_id: span.spanId } : {};
}
