import { type Context, defaultTextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

const propagator = new W3CTraceContextPropagator();

/**
 * The W3C `traceparent` of the span `ctx` holds, to send or store; undefined when it holds none. Here,
 * below tracing/, so the runtime's tools can name their span to a server (an MCP call's `_meta`).
 */
export function traceparentOf(ctx: Context | undefined): string | undefined {
  if (!ctx) return undefined;
  const carrier: Record<string, string> = {};
  propagator.inject(ctx, carrier, defaultTextMapSetter);
  return carrier.traceparent;
}
