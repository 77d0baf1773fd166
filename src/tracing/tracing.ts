import {
  type Attributes,
  type Context,
  context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { traceparentOf } from '../runtime/trace-context.js';
import type { TracingSettings } from './settings.js';

/**
 * Spans are made by each app's own provider (passed down through options, never registered globally),
 * so several apps in one process (the tests, replicas) each export to their own endpoint, and an app
 * without tracing records nothing. The parent of each span is passed explicitly (SpanOptions.parent,
 * `request.trace`, a run's `trace`): no context follows the awaits, since AsyncLocalStorage taxes every
 * promise in the process (docs/benchmarks.md, "Tracing"). Database statement spans are the exception,
 * made from Kysely's query log with nothing to pass them: with OTEL_AGENTRY_DB_SPANS (a debug setting)
 * the AsyncLocalStorage manager is installed in the OTel API's one slot per process while such an app
 * is open, and `with` makes a span active for them.
 */
let contextManagerUsers = 0;
function useContextManager(): () => void {
  if (contextManagerUsers++ === 0) context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  return () => {
    if (--contextManagerUsers === 0) context.disable();
  };
}

const propagator = new W3CTraceContextPropagator();
const headerGetter: TextMapGetter<Record<string, string | string[] | undefined>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent: a context, or a stored `traceparent`; the active context when absent. */
  parent?: Context | string | null;
  /** A new trace whatever is active (background work: its origin is a link instead). */
  root?: boolean;
  /** Spans this one follows from without being their child (a task fire, stored as a `traceparent`). */
  links?: (string | null | undefined)[];
  /** When it began, if before now (ms since the epoch). */
  startTime?: number;
}

/** A span as the parent of spans started later: what a run hands its model calls and tool calls. */
export type TraceContext = Context;

/**
 * The tracer facade the rest of the platform calls (docs/operations.md, "Traces"). It exists only when
 * tracing is on: callers hold `Tracing | undefined` and do nothing at all when it is undefined.
 */
export class Tracing {
  readonly tracer: Tracer;

  private releaseContextManager?: () => void;

  constructor(
    private readonly provider: BasicTracerProvider,
    readonly settings: TracingSettings,
  ) {
    this.tracer = provider.getTracer('agentry');
    if (settings.dbSpans) this.releaseContextManager = useContextManager();
  }

  /** Tracing of one app as its settings say; undefined (no provider, no hooks, no cost) when no endpoint is set. */
  static create(settings: TracingSettings, exporter?: SpanExporter): Tracing | undefined {
    if (!settings.endpoint && !exporter) return undefined;
    const resource = defaultResource().merge(
      resourceFromAttributes({ ...settings.resourceAttributes, [ATTR_SERVICE_NAME]: settings.serviceName }),
    );
    const spanExporter = exporter ?? new OTLPTraceExporter({ url: settings.endpoint, headers: settings.headers.reveal() });
    // The sampler and span limits come from the standard variables (OTEL_TRACES_SAMPLER...), read by the SDK.
    const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(spanExporter)] });
    return new Tracing(provider, settings);
  }

  /** Starts a span (child of `parent`, else of the active context, the root one but with OTEL_AGENTRY_DB_SPANS); the caller ends it. */
  startSpan(name: string, options: SpanOptions = {}): Span {
    const links = (options.links ?? []).map((t) => this.linkTo(t)).filter((l): l is Link => l !== undefined);
    return this.tracer.startSpan(
      name,
      { kind: options.kind, attributes: options.attributes, links: links.length ? links : undefined, startTime: options.startTime },
      options.root ? ROOT_CONTEXT : this.parentContext(options.parent),
    );
  }

  /**
   * Runs `fn` handed the context holding `span`, to pass on as the parent (`SpanOptions.parent`) of what
   * it starts. With OTEL_AGENTRY_DB_SPANS the span is also active inside `fn`, for the statement spans.
   */
  with<T>(span: Span, fn: (ctx: TraceContext) => T): T {
    const ctx = trace.setSpan(context.active(), span);
    return context.with(ctx, () => fn(ctx));
  }

  /** Runs `fn` inside a new span, ended when `fn` settles (an error recorded on it, then rethrown); `ctx` as in `with`. */
  async inSpan<T>(name: string, options: SpanOptions, fn: (span: Span, ctx: TraceContext) => Promise<T> | T): Promise<T> {
    const span = this.startSpan(name, options);
    try {
      return await this.with(span, (ctx) => fn(span, ctx));
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  /** The W3C `traceparent` of the span `ctx` holds, to send or store; undefined when it holds none. */
  traceparent(ctx: Context | undefined): string | undefined {
    return traceparentOf(ctx);
  }

  /** Adds the `traceparent` (and `tracestate`) of the span `ctx` holds to outgoing headers. */
  inject(headers: Headers, ctx: Context) {
    propagator.inject(ctx, headers, { set: (h, k, v) => h.set(k, v) });
  }

  /** The remote parent named by incoming headers (`traceparent`, `tracestate`), or the root context. */
  extract(headers: Record<string, string | string[] | undefined>): Context {
    return propagator.extract(ROOT_CONTEXT, headers, headerGetter);
  }

  /** A context whose parent is the span a stored `traceparent` names; undefined when it names none. */
  contextOf(traceparent: string | null | undefined): Context | undefined {
    if (!traceparent) return undefined;
    const ctx = this.extract({ traceparent });
    return trace.getSpanContext(ctx) ? ctx : undefined;
  }

  /** Exports what is buffered (tests read the receiver after it). */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  /** Exports what is left and stops (app close). */
  shutdown(): Promise<void> {
    this.releaseContextManager?.();
    this.releaseContextManager = undefined;
    return this.provider.shutdown();
  }

  private parentContext(parent: SpanOptions['parent']): Context {
    if (parent === undefined || parent === null) return context.active();
    if (typeof parent === 'string') return this.contextOf(parent) ?? context.active();
    return parent;
  }

  private linkTo(traceparent: string | null | undefined): Link | undefined {
    const ctx = this.contextOf(traceparent);
    const spanContext = ctx && trace.getSpanContext(ctx);
    return spanContext ? { context: spanContext } : undefined;
  }
}

/** Marks a span failed: status ERROR with the error's message, its `error.type` (a domain error's code, else its class). */
export function failSpan(span: Span, err: unknown, type?: string) {
  const message = err instanceof Error ? err.message : String(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute('error.type', type ?? errorType(err));
  if (err instanceof Error) span.recordException(err);
}

function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code) return code;
  return err instanceof Error ? err.constructor.name : '_OTHER';
}
