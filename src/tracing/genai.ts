import type { LanguageModelV3CallOptions, LanguageModelV3Prompt } from '@ai-sdk/provider';
import { type Attributes, type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { AttemptWatch } from '../runtime/model-step.js';
import type { ToolAgent, ToolSet } from '../runtime/tools/types.js';
import { logUnder } from './logs.js';
import { failSpan, type TraceContext, type Tracing } from './tracing.js';

/**
 * Spans of runs, model calls and tool calls with the OpenTelemetry GenAI semantic conventions
 * (gen_ai.*): `invoke_agent <agent>` per run, `chat <model>` per model call, `execute_tool <tool>` per
 * tool call. Prompt, completion and tool-call text are recorded only with OTEL_GENAI_CAPTURE_CONTENT=true.
 */

/** The model id `provider/name` as gen_ai.provider.name and gen_ai.request.model. */
function modelAttributes(modelId: string): { 'gen_ai.provider.name': string; 'gen_ai.request.model': string } {
  const slash = modelId.indexOf('/');
  return slash > 0
    ? { 'gen_ai.provider.name': modelId.slice(0, slash), 'gen_ai.request.model': modelId.slice(slash + 1) }
    : { 'gen_ai.provider.name': 'unknown', 'gen_ai.request.model': modelId };
}

export interface RunSpanInfo {
  runId: string;
  kind: string;
  tenantId: string;
  agent: { id: string; name: string };
  model: string;
  conversationId: string | null;
  /** A stored `traceparent` to continue (a run resumed elsewhere). */
  parent?: string | null;
  /** A new run's parent: what started it (a request, a tool call delegating to it, a task job). */
  startedBy?: TraceContext;
  /** A resumed run's link: what resumed it (the request approving its tool call). */
  resumedBy?: TraceContext;
}

/** What the span records of a run's end (runs' RunOutcome, structurally: tracing imports no domain). */
interface RunEnd {
  status: string;
  error: { code: string; message: string } | null;
  cost: number;
  tokenUsage: { inputTokens: number; outputTokens: number };
}

/**
 * Runs `execute` inside the run's `invoke_agent` span, ended with the run's outcome (null: ended elsewhere).
 * `execute` is handed the span as the parent of the run's model calls and tool calls.
 */
export function traceRun<T extends RunEnd | null>(
  tracing: Tracing,
  info: RunSpanInfo,
  execute: (run: TraceContext) => Promise<T>,
): Promise<T> {
  // A run continued from its stored context links to what resumed it.
  const resumedBy = info.parent ? tracing.traceparent(info.resumedBy) : undefined;
  const span = tracing.startSpan(`invoke_agent ${info.agent.name}`, {
    kind: SpanKind.INTERNAL,
    parent: info.parent ?? info.startedBy,
    links: resumedBy ? [resumedBy] : undefined,
    attributes: {
      ...(info.parent ? { 'agentry.run.resumed': true } : {}),
      'gen_ai.operation.name': 'invoke_agent',
      ...modelAttributes(info.model),
      'gen_ai.agent.id': info.agent.id,
      'gen_ai.agent.name': info.agent.name,
      ...(info.conversationId ? { 'gen_ai.conversation.id': info.conversationId } : {}),
      'agentry.run.id': info.runId,
      'agentry.run.kind': info.kind,
      'agentry.tenant.id': info.tenantId,
    },
  });
  const unlog = logUnder(info.runId, span);
  return tracing.with(span, execute).then(
    (outcome) => {
      if (outcome) {
        span.setAttributes({
          'agentry.run.status': outcome.status,
          'agentry.run.cost_usd': outcome.cost,
          'gen_ai.usage.input_tokens': outcome.tokenUsage.inputTokens,
          'gen_ai.usage.output_tokens': outcome.tokenUsage.outputTokens,
        });
        if (outcome.status === 'failed') {
          span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error?.message });
          span.setAttribute('error.type', outcome.error?.code ?? 'failed');
        }
      }
      span.end();
      unlog();
      return outcome;
    },
    (err: unknown) => {
      failSpan(span, err);
      span.end();
      unlog();
      throw err;
    },
  );
}

/**
 * Captured content as one attribute, at most 64 KiB: a conversation or a tool's result may be megabytes,
 * and every span is held in memory until exported.
 */
const MAX_CAPTURED = 64 * 1024;
const captured = (value: unknown) => {
  const text = JSON.stringify(value ?? null);
  return text.length > MAX_CAPTURED ? `${text.slice(0, MAX_CAPTURED)}…[truncated]` : text;
};

/** OpenAI's words for the finish reasons the V3 interface unifies (tool-calls -> tool_calls). */
const finishReason = (reason: string) => reason.replace(/-/g, '_');

/** The prompt as gen_ai.input.messages (and the system text as gen_ai.system_instructions). */
function promptAttributes(prompt: LanguageModelV3Prompt): Attributes {
  const system: { type: 'text'; content: string }[] = [];
  const messages: { role: string; parts: unknown[] }[] = [];
  for (const m of prompt) {
    if (m.role === 'system') {
      system.push({ type: 'text', content: m.content });
      continue;
    }
    const parts = m.content.map((p) => {
      switch (p.type) {
        case 'text':
        case 'reasoning':
          return { type: p.type, content: p.text };
        case 'tool-call':
          return { type: 'tool_call', id: p.toolCallId, name: p.toolName, arguments: p.input };
        case 'tool-result':
          return { type: 'tool_call_response', id: p.toolCallId, response: p.output };
        default:
          return { type: p.type };
      }
    });
    messages.push({ role: m.role, parts });
  }
  return {
    'gen_ai.input.messages': captured(messages),
    ...(system.length ? { 'gen_ai.system_instructions': captured(system) } : {}),
  };
}

/**
 * A `chat <model>` CLIENT span per attempt of a model's call, by model id: from the request until its
 * stream was read to the end, with the usage, finish reason and response id the stream reports. A
 * retried call is a span per attempt (each one a request to the provider). The step driver tells it
 * the parts as it reads them, so no second stream is built around the provider's. Each is a child of `run`.
 */
export function chatSpans(tracing: Tracing, run: TraceContext): (modelId: string) => (options: LanguageModelV3CallOptions) => AttemptWatch {
  const capture = tracing.settings.captureContent;
  return (modelId) => {
    const names = modelAttributes(modelId);
    return (options) => {
      const span = tracing.startSpan(`chat ${names['gen_ai.request.model']}`, {
        parent: run,
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': 'chat',
          ...names,
          ...(options.maxOutputTokens !== undefined ? { 'gen_ai.request.max_tokens': options.maxOutputTokens } : {}),
          ...(options.temperature !== undefined ? { 'gen_ai.request.temperature': options.temperature } : {}),
          ...(capture ? promptAttributes(options.prompt) : {}),
        },
      });
      return watchedAttempt(span, capture);
    };
  };
}

/** The span of one attempt, told its stream's parts; it ends once, when the attempt did (done, failed or cancelled). */
function watchedAttempt(span: Span, capture: boolean): AttemptWatch {
  let text = '';
  const calls: unknown[] = [];
  let reason: string | undefined;
  let ended = false;
  return {
    part(part) {
      switch (part.type) {
        case 'response-metadata':
          if (part.id) span.setAttribute('gen_ai.response.id', part.id);
          if (part.modelId) span.setAttribute('gen_ai.response.model', part.modelId);
          break;
        case 'text-delta':
          if (capture) text += part.delta;
          break;
        case 'tool-call':
          if (capture) calls.push({ type: 'tool_call', id: part.toolCallId, name: part.toolName, arguments: part.input });
          break;
        case 'finish':
          reason = finishReason(part.finishReason.unified);
          span.setAttributes({
            'gen_ai.response.finish_reasons': [reason],
            'gen_ai.usage.input_tokens': part.usage.inputTokens.total ?? 0,
            'gen_ai.usage.output_tokens': part.usage.outputTokens.total ?? 0,
          });
          break;
        case 'error':
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.setAttribute('error.type', 'provider_error');
          break;
      }
    },
    end(err) {
      if (ended) return;
      ended = true;
      if (err !== undefined) failSpan(span, err);
      if (capture) {
        const parts = [...(text ? [{ type: 'text', content: text }] : []), ...calls];
        span.setAttribute('gen_ai.output.messages', captured([{ role: 'assistant', parts, finish_reason: reason ?? 'other' }]));
      }
      span.end();
    },
  };
}

/** The tool set with an `execute_tool <name>` span, a child of `run`, around each call. */
export function tracedTools<A extends ToolAgent>(tracing: Tracing, set: ToolSet<A>, run: TraceContext): ToolSet<A> {
  const capture = tracing.settings.captureContent;
  return {
    ...set,
    tools: set.tools.map((tool) => ({
      ...tool,
      execute: (input, ctx) => {
        // The tool's source (mcp, delegation, a2a...), where the registry names it.
        const source = (set as { sources?: ReadonlyMap<string, string> }).sources?.get(tool.name);
        const attributes: Attributes = {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': tool.name,
          'gen_ai.tool.type': 'function',
          ...(ctx.toolCallId ? { 'gen_ai.tool.call.id': ctx.toolCallId } : {}),
          ...(source ? { 'agentry.tool.source': source } : {}),
          ...(capture ? { 'gen_ai.tool.call.arguments': captured(input) } : {}),
        };
        return tracing.inSpan(`execute_tool ${tool.name}`, { parent: run, kind: SpanKind.INTERNAL, attributes }, async (span, call) => {
          const result = await tool.execute(input, { ...ctx, trace: call });
          if (capture) span.setAttribute('gen_ai.tool.call.result', captured(result));
          return result;
        });
      },
    })),
  };
}
