import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { LogEvent } from 'kysely';
import type { Tracing } from './tracing.js';

/**
 * Every database statement as a CLIENT span (OTEL_AGENTRY_DB_SPANS=true, a debug setting: a run makes
 * dozens), made from Kysely's query log, which reports each statement once it ended with its duration
 * (failed ones too). The SQL text is parameterised: values never reach the span.
 */
export function dbStatementLog(tracing: Tracing, system: 'sqlite' | 'postgresql'): (event: LogEvent) => void {
  return (event) => {
    const endTime = Date.now();
    const sql = event.query.sql;
    const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? 'QUERY';
    const span = tracing.startSpan(operation, {
      kind: SpanKind.CLIENT,
      // Kysely reports the statement after it ended: the span is given the time it took.
      startTime: endTime - event.queryDurationMillis,
      attributes: { 'db.system.name': system, 'db.operation.name': operation, 'db.query.text': sql.slice(0, 2000) },
    });
    if (event.level === 'error') {
      span.setStatus({ code: SpanStatusCode.ERROR, message: event.error instanceof Error ? event.error.message : String(event.error) });
      span.setAttribute('error.type', (event.error as { code?: string } | null)?.code ?? 'error');
    }
    span.end(endTime);
  };
}
