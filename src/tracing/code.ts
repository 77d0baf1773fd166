import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { TraceContext, Tracing } from './tracing.js';

/** What a code execution's span records (the code domain's result; tracing imports no domain). */
interface CodeSpanEnd {
  exitCode: number | null;
  durationMs: number;
  limit?: { code: string; message: string };
}

/**
 * A code execution's span, `code_execution <language>`, a child of the tool call's `execute_tool`
 * span (`parent`, else the active one): its language, skill script, duration, exit and the limit
 * that ended it, if one did. The code itself is not recorded.
 */
export function traceCodeExecution<T extends CodeSpanEnd>(
  tracing: Tracing,
  info: { language: string; script?: string },
  execute: () => Promise<T>,
  parent?: TraceContext,
): Promise<T> {
  const attributes = { 'agentry.code.language': info.language, ...(info.script ? { 'agentry.code.script': info.script } : {}) };
  return tracing.inSpan(`code_execution ${info.language}`, { parent, kind: SpanKind.INTERNAL, attributes }, async (span) => {
    const result = await execute();
    span.setAttribute('agentry.code.duration_ms', result.durationMs);
    if (result.exitCode !== null) span.setAttribute('agentry.code.exit_code', result.exitCode);
    if (result.limit) {
      span.setAttribute('agentry.code.limit', result.limit.code);
      span.setAttribute('error.type', result.limit.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: result.limit.message });
    }
    return result;
  });
}
