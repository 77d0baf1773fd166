import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Message,
  LanguageModelV3StreamPart,
  SharedV3ProviderMetadata,
  SharedV3Warning,
} from '@ai-sdk/provider';
import {
  abortableDelay,
  classifyProviderError,
  DEFAULT_RETRY_POLICY,
  type ProviderErrorCode,
  ProviderError,
  IncompleteStreamError,
  type ProviderFailure,
  type RetryPolicy,
  retryDelayMs,
} from './models/retries.js';
import { MAX_RUN_JSON_BYTES, outOfBounds } from '../json-bounds.js';
import { BreakerOpenError, type BreakerTicket } from './models/breaker.js';
import { AttemptTimer, type ModelTimeouts } from './models/timeouts.js';

/**
 * One model step, driven over the provider interface (`LanguageModelV3.doStream`) rather than the AI
 * SDK's `streamText`: streamText costs 1.1-1.4 ms of CPU per step (web-stream transforms, zod
 * validation of the whole prompt on every step, telemetry wrappers) against ~40 µs for the echo
 * model's own stream, and that was most of a run's CPU. The
 * providers (OpenAI, Anthropic, OpenAI-compatible) are the AI SDK's own; what this file takes over
 * from streamText is small and fixed by the V3 specification: retrying the call (models/retries.ts decides
 * how; streamText's own retry is not in the path), collecting the
 * streamed parts into the assistant message that the next step sends back (provider metadata
 * included: reasoning item ids, encrypted reasoning, thinking signatures), and parsing tool-call input.
 */

/** A tool call the model made in this step, its input parsed (or why it could not be). */
export interface StepToolCall {
  toolCallId: string;
  toolName: string;
  /** Parsed JSON input; the raw text when it did not parse (then `invalid` says why). */
  input: unknown;
  invalid?: string;
  providerExecuted?: boolean;
}

export interface StepOutput {
  /** The assistant message to send back on the next step, as the provider produced it. */
  message: Extract<LanguageModelV3Message, { role: 'assistant' }>;
  toolCalls: StepToolCall[];
  finishReason: string;
  usage: { inputTokens: number; outputTokens: number };
  /** The first error the stream reported; what was produced before it stays in `message`. */
  error?: unknown;
  /** The error's code when it was the provider's (a broken connection, an overloaded event...). */
  errorCode?: ProviderErrorCode;
  /** When it was the provider's: what the run's error says (generic words for a connection-level failure)... */
  errorMessage?: string;
  /** ...and that failure's own words, for the server log only (ProviderFailure.detail). */
  errorDetail?: string;
  /** What the provider warned about at the start of the stream (a setting the model does not support...), in words. */
  warnings: string[];
}

export interface StepHandlers {
  onText(delta: string): void;
  /** Told of each part the provider streams (the idle timeout starts again). */
  onPart?(): void;
  /**
   * The caller receives nothing before the step ends (a plain execute): an answer cut after its first
   * text starts the step over (retried, or handed to a fallback) instead of ending it, as any failed call.
   */
  cutRestarts?: boolean;
  /** Told when an answer broke off after text reached `onText`, and what follows: the step starts over (`retry`, `fallback`) or ends failed. */
  onCut?(cut: AnswerCut): void;
  /** Told before each retry of the call after a provider failure (metrics count them). */
  onRetry?(code: ProviderErrorCode): void;
}

/** What a step asks of a model: the call's options (prompt, tools, limits, signal), and the tools it may call (a call of another is invalid). */
export interface StepRequest {
  options: LanguageModelV3CallOptions;
  toolNames: ReadonlySet<string>;
}

/** An answer that broke off after some of its text was told, and what followed. */
export interface AnswerCut {
  code: ProviderErrorCode;
  message: string;
  next: 'retry' | 'fallback' | 'fail';
}

type AssistantPart = StepOutput['message']['content'][number];
type OpenPart = { type: 'text' | 'reasoning'; text: string; providerOptions?: SharedV3ProviderMetadata };

/** Tool-call input arrives as JSON text; empty text means no arguments. Messages as the AI SDK words them. */
function parseToolCall(part: Extract<LanguageModelV3StreamPart, { type: 'tool-call' }>, known: ReadonlySet<string>): StepToolCall {
  const call: StepToolCall = { toolCallId: part.toolCallId, toolName: part.toolName, input: part.input };
  if (part.providerExecuted) {
    call.providerExecuted = true;
    return call;
  }
  const text = part.input.trim();
  let parseError: string | undefined;
  if (Buffer.byteLength(text) > MAX_RUN_JSON_BYTES) {
    // Not parsed, nor repeated back: the model is told its size.
    call.input = {};
    parseError = `the input is larger than ${MAX_RUN_JSON_BYTES} bytes as JSON`;
  } else {
    try {
      call.input = text === '' ? {} : JSON.parse(text);
    } catch (err) {
      parseError = `JSON parsing failed: Text: ${part.input}.\nError message: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  // An input nested too deep would overflow the stack wherever it is next serialised (the run's
  // events, the next prompt): it is dropped here, and the call fails with the reason.
  const unbounded = parseError === undefined ? outOfBounds(call.input) : undefined;
  if (unbounded) {
    call.input = {};
    parseError = `the input ${unbounded}`;
  }
  if (!known.has(part.toolName)) {
    call.invalid = `Model tried to call unavailable tool '${part.toolName}'. ${known.size ? `Available tools: ${[...known].join(', ')}.` : 'No tools are available.'}`;
  } else if (parseError) {
    call.invalid = `Invalid input for tool ${part.toolName}: ${parseError}`;
  }
  return call;
}

/** A provider's warning in words, as the AI SDK's own warning log words it. */
function describeWarning(w: SharedV3Warning): string {
  const details = 'details' in w && w.details ? ` (${w.details})` : '';
  switch (w.type) {
    case 'unsupported':
      return `model warning: the feature "${w.feature}" is not supported${details}`;
    case 'compatibility':
      return `model warning: the feature "${w.feature}" is used in a compatibility mode${details}`;
    default:
      return `model warning: ${(w as { message?: string }).message ?? JSON.stringify(w)}`;
  }
}

function usageOf(part: Extract<LanguageModelV3StreamPart, { type: 'finish' }>) {
  return { inputTokens: part.usage.inputTokens.total ?? 0, outputTokens: part.usage.outputTokens.total ?? 0 };
}

/** Asked before each call: a ticket to report how it ended, or undefined when the model's breaker skips it (models/breaker.ts). */
interface AttemptGate {
  /** The model gated, `provider/name` (named by the error when its breaker is open). */
  model: string;
  enter(): BreakerTicket | undefined;
}

const UNGATED: BreakerTicket = { probe: false, success() {}, failure() {}, release() {} };

/**
 * Tells the breaker how a call ended, once, after its retries: a provider that failed it for good
 * counts against the model; a rate limit (the provider asking for less, not down), a refused request
 * (400) and anything not the provider's tell nothing of its health.
 */
function settle(ticket: BreakerTicket, failure: ProviderFailure | undefined) {
  if (failure?.retryable && failure.code !== 'provider_rate_limited') ticket.failure();
  else ticket.release();
}

/**
 * Told of one attempt of a model call, as it is read (tracing's `chat` span, tracing/genai.ts): each
 * part of its stream, then how it ended, once: with the error that failed it (the call, or reading its
 * stream), or none. Watching from the step's own read costs no second stream around the provider's.
 */
export interface AttemptWatch {
  part(part: LanguageModelV3StreamPart): void;
  end(error?: unknown): void;
}

/** The model a step asks, and how its call is attempted. */
export interface StepModel {
  model: LanguageModelV3;
  /** Watches each attempt, from just before its request (the call's options as sent); none: unwatched. */
  watch?: (options: LanguageModelV3CallOptions) => AttemptWatch;
  /** How a failed call is retried; DEFAULT_RETRY_POLICY when not given. */
  retry?: RetryPolicy;
  /** The model's breaker; none: the call is not gated. */
  gate?: AttemptGate;
  /** How long an attempt may take; none: no limit. */
  timeouts?: ModelTimeouts;
}

/**
 * Streams one step. Text and reasoning parts keep the provider metadata of their last chunk that had
 * any (start, delta or end), as the next request needs it; empty text parts are dropped. A provider
 * failure before any text reached the client is retried as `retry` says; one after it ends the step
 * with `error` set and what was said kept. A call that fails for good throws (a ProviderError when
 * it was the provider's; a BreakerOpenError when `gate` refuses the call). The breaker hears of the
 * call once, when it has ended.
 */
export async function streamStep(
  { model, retry = DEFAULT_RETRY_POLICY, gate, timeouts, watch }: StepModel,
  request: StepRequest,
  handlers: StepHandlers,
): Promise<StepOutput> {
  const ticket = gate ? gate.enter() : UNGATED;
  // The breaker is open (this model failed most of its recent calls): not one attempt.
  if (!ticket) throw new BreakerOpenError(gate!.model);
  let ended: ProviderFailure | undefined;
  let succeeded = false;
  try {
    // A probe is one attempt: a model that is still down is found out at the cost of one request.
    const policy = ticket.probe ? { ...retry, maxAttempts: 1 } : retry;
    const out = await attempts({ model, retry: policy, timeouts, watch }, request, handlers, (failure) => (ended = failure));
    succeeded = out.error === undefined;
    return out;
  } finally {
    if (succeeded) ticket.success();
    else if (request.options.abortSignal?.aborted) ticket.release();
    else settle(ticket, ended);
  }
}

/** The attempts of one call, as `retry` says; `failed` hears each provider failure, the last one being how the call ended. */
async function attempts(
  { model, retry, timeouts, watch: watchAttempt }: StepModel & { retry: RetryPolicy },
  { options, toolNames }: StepRequest,
  handlers: StepHandlers,
  failed: (failure: ProviderFailure | undefined) => void,
): Promise<StepOutput> {
  const signal = options.abortSignal;
  for (let attempt = 1; ; attempt++) {
    let out: StepOutput;
    let emitted = false;
    // Each attempt on its own clock: a limit that passes aborts it (models/timeouts.ts), the run's signal still ends it.
    const timer = timeouts && new AttemptTimer(timeouts, signal);
    const call = timer ? { ...options, abortSignal: timer.signal } : options;
    const watch = watchAttempt?.(call);
    try {
      const { stream } = await model.doStream(call);
      timer?.answered();
      out = await readStep(
        stream,
        toolNames,
        {
          onText: (delta) => {
            emitted = true;
            handlers.onText(delta);
          },
          onPart: timer && (() => timer.progress()),
        },
        { timeout: timer?.signal, watch },
      );
    } catch (err) {
      watch?.end(err);
      timer?.stop();
      const failure = signal?.aborted ? undefined : timer?.passed ? timer.failure() : classifyProviderError(err);
      failed(failure);
      if (!failure) throw err;
      const delay = retryDelayMs(retry, attempt, failure);
      if (delay === undefined) throw new ProviderError(failure.code, failure.message, { cause: err, detail: failure.detail });
      handlers.onRetry?.(failure.code);
      await abortableDelay(delay, signal);
      continue;
    }
    timer?.stop();
    if (out.error === undefined || signal?.aborted) return out;
    const failure = timer?.passed ? timer.failure() : classifyProviderError(out.error);
    failed(failure);
    // Nothing reached the client yet (or the caller hears nothing before the end): the step starts over as if this attempt had not been.
    const delay = failure && (!emitted || handlers.cutRestarts) ? retryDelayMs(retry, attempt, failure) : undefined;
    if (delay === undefined) {
      if (failure) Object.assign(out, { errorCode: failure.code, errorMessage: failure.message, errorDetail: failure.detail });
      return out;
    }
    if (emitted) handlers.onCut?.({ code: failure!.code, message: failure!.message, next: 'retry' });
    handlers.onRetry?.(failure!.code);
    await abortableDelay(delay, signal);
  }
}

/**
 * Reads one attempt's stream into the step's output. A stream that errors part-way answers what it
 * had, with `error` set.
 */
async function readStep(
  stream: ReadableStream<LanguageModelV3StreamPart>,
  toolNames: ReadonlySet<string>,
  handlers: StepHandlers,
  {
    timeout,
    watch,
  }: {
    /** An attempt's timeout: cancels the read even where the provider package would not end its stream. */
    timeout?: AbortSignal;
    watch?: AttemptWatch;
  },
): Promise<StepOutput> {
  const content: AssistantPart[] = [];
  const open = new Map<string, OpenPart>();
  const out: StepOutput = {
    message: { role: 'assistant', content },
    toolCalls: [],
    finishReason: 'other',
    usage: { inputTokens: 0, outputTokens: 0 },
    warnings: [],
  };
  const openPart = (type: OpenPart['type'], id: string, metadata?: SharedV3ProviderMetadata) => {
    const part: OpenPart = { type, text: '', providerOptions: metadata };
    open.set(`${type}:${id}`, part);
    content.push(part);
    return part;
  };
  const track = (type: OpenPart['type'], id: string, metadata?: SharedV3ProviderMetadata) => {
    // A delta without its start still counts (some providers skip the start part).
    const part = open.get(`${type}:${id}`) ?? openPart(type, id);
    if (metadata) part.providerOptions = metadata;
    return part;
  };

  // Whether the provider said anything (a response, content, a finish with usage) and finished: else its answer broke off.
  let answered = false;
  let finished = false;
  const reader = stream.getReader();
  const cancel = () => void reader.cancel(timeout?.reason).catch(() => {});
  timeout?.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { done, value: part } = await reader.read();
      if (done) break;
      watch?.part(part);
      handlers.onPart?.();
      if (part.type !== 'stream-start' && part.type !== 'finish' && part.type !== 'error') answered = true;
      switch (part.type) {
        case 'stream-start':
          for (const w of part.warnings) out.warnings.push(describeWarning(w));
          break;
        case 'text-start':
        case 'reasoning-start':
          openPart(part.type === 'text-start' ? 'text' : 'reasoning', part.id, part.providerMetadata);
          break;
        case 'text-delta':
          track('text', part.id, part.providerMetadata).text += part.delta;
          if (part.delta) handlers.onText(part.delta);
          break;
        case 'reasoning-delta':
          track('reasoning', part.id, part.providerMetadata).text += part.delta;
          break;
        case 'text-end':
        case 'reasoning-end':
          track(part.type === 'text-end' ? 'text' : 'reasoning', part.id, part.providerMetadata);
          open.delete(`${part.type === 'text-end' ? 'text' : 'reasoning'}:${part.id}`);
          break;
        case 'tool-call': {
          const call = parseToolCall(part, toolNames);
          out.toolCalls.push(call);
          content.push({
            type: 'tool-call',
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            // What the model sent back must be an object even when its JSON was broken.
            input: call.invalid && (call.input === null || typeof call.input !== 'object') ? {} : call.input,
            ...(part.providerExecuted ? { providerExecuted: true } : {}),
            ...(part.providerMetadata ? { providerOptions: part.providerMetadata } : {}),
          });
          break;
        }
        case 'tool-result': {
          if (part.preliminary) break;
          // Results of tools the provider ran itself (web search...) belong to the assistant turn; one
          // past the JSON bounds is kept as the reason only (the next step's prompt serialises it).
          const unbounded = outOfBounds(part.result);
          content.push({
            type: 'tool-result',
            toolCallId: part.toolCallId,
            toolName: part.toolName,
            output: unbounded
              ? { type: 'error-text', value: `the result ${unbounded}` }
              : part.isError
                ? { type: 'error-json', value: part.result }
                : typeof part.result === 'string'
                  ? { type: 'text', value: part.result }
                  : { type: 'json', value: part.result },
            ...(part.providerMetadata ? { providerOptions: part.providerMetadata } : {}),
          });
          break;
        }
        case 'file':
          content.push({
            type: 'file',
            data: part.data,
            mediaType: part.mediaType,
            ...(part.providerMetadata ? { providerOptions: part.providerMetadata } : {}),
          });
          break;
        case 'finish':
          finished = true;
          if (part.finishReason.raw !== undefined || part.usage.inputTokens.total !== undefined) answered = true;
          out.finishReason = part.finishReason.unified;
          out.usage = usageOf(part);
          break;
        case 'error':
          out.error ??= part.error;
          out.finishReason = 'error';
          break;
        default:
          // response-metadata, tool-input-*, source, raw: nothing the loop keeps.
          break;
      }
    }
  } catch (err) {
    // The stream itself broke (a dropped connection, or the run's signal aborted the fetch).
    watch?.end(err);
    out.error ??= err;
    out.finishReason = 'error';
  } finally {
    timeout?.removeEventListener('abort', cancel);
    reader.releaseLock();
    watch?.end();
  }
  if (out.error === undefined && !(answered && finished)) {
    out.error = new IncompleteStreamError(answered ? 'the stream ended before its finish' : 'the stream carried no response');
    out.finishReason = 'error';
  }
  // Empty text parts carry nothing back to the model.
  out.message.content = content.filter((p) => !(p.type === 'text' && p.text === ''));
  return out;
}
