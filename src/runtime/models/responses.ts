import type http from 'node:http';
import {
  APICallError,
  InvalidResponseDataError,
  JSONParseError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3FinishReason,
  type LanguageModelV3StreamResult,
  type LanguageModelV3Usage,
  type SharedV3ProviderMetadata,
  type SharedV3Warning,
  TypeValidationError,
} from '@ai-sdk/provider';
import {
  type Controller,
  eventStream,
  failedResponse,
  headersOf,
  isObject,
  keepAliveAgent,
  lazyHeaders,
  optional,
  post,
} from './http-stream.js';

/**
 * OpenAI's Responses API (`openai/*` models) with a streamed call of its own: `@ai-sdk/openai`'s doStream
 * pipes each answer through fetch, a tee and five web-stream transforms and validates every event
 * against the zod union of ~25 event types, ~2.2-3.5 ms of CPU a call (docs/benchmarks.md, "Real
 * models, second round"). Here the request is the AI SDK model's own (its `getArgs`: the same messages,
 * tools, warnings), sent over node:http with kept-alive connections, and the events are parsed as they
 * arrive into the parts the AI SDK's doStream emits, provider metadata included (a reasoning item's id
 * and encrypted content go back to the model in the next step). `doGenerate` is the AI SDK model's.
 *
 * What this gives up: zod's check of each event (the fields read are checked by hand); a call with
 * provider tools, `providerOptions` or raw chunks goes to the AI SDK's doStream, whole (Agentry sets
 * none of them); hosted tools' events, annotations (sources) and logprobs are not read; a function call
 * named `multi_tool_use.parallel` is not expanded. One change on purpose: a stream whose body ends
 * without `response.completed`, `.incomplete` or `.failed` ends with an error (the AI SDK finishes it
 * with reason `other`), so a cut answer is retried rather than taken.
 */

/** The AI SDK Responses model's private members this uses (checked when the model is wrapped). */
interface ResponsesInternals {
  getArgs(options: LanguageModelV3CallOptions): Promise<{
    args: Record<string, unknown>;
    warnings: SharedV3Warning[];
    store: boolean | undefined;
    providerOptionsName: string;
  }>;
  config: { url(options: { path: string; modelId: string }): string; headers(): Record<string, string | undefined> };
}

/** One OpenAI endpoint as configured: its models share its kept-alive connections. */
export class ResponsesEndpoint {
  private agent?: http.Agent;

  /** `sdk`'s streamed calls made here; its other calls stay the AI SDK's. */
  model(sdk: LanguageModelV3): LanguageModelV3 {
    const internals = sdk as unknown as Partial<ResponsesInternals>;
    if (
      typeof internals.getArgs !== 'function' ||
      typeof internals.config?.url !== 'function' ||
      typeof internals.config.headers !== 'function'
    ) {
      // A new @ai-sdk/openai that moved these: fail at once rather than stream differently.
      throw new Error('@ai-sdk/openai: the Responses model no longer has getArgs/config; responses.ts needs updating');
    }
    return new ResponsesModel(sdk, internals as ResponsesInternals, this);
  }

  agentFor(url: URL): http.Agent {
    this.agent ??= keepAliveAgent(url);
    return this.agent;
  }
}

class ResponsesModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3';
  readonly provider: string;
  readonly modelId: string;
  readonly supportedUrls: LanguageModelV3['supportedUrls'];

  constructor(
    private readonly sdk: LanguageModelV3,
    private readonly internals: ResponsesInternals,
    private readonly endpoint: ResponsesEndpoint,
  ) {
    this.provider = sdk.provider;
    this.modelId = sdk.modelId;
    this.supportedUrls = sdk.supportedUrls;
  }

  private configHeaders?: Record<string, string>;

  doGenerate(options: LanguageModelV3CallOptions) {
    return this.sdk.doGenerate(options);
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const providerTools = options.tools?.some((tool) => tool.type === 'provider');
    const hasOptions = options.providerOptions && Object.keys(options.providerOptions).length > 0;
    if (providerTools || hasOptions || options.includeRawChunks) return this.sdk.doStream(options);

    const { args, warnings, store, providerOptionsName } = await this.internals.getArgs(options);
    const url = new URL(this.internals.config.url({ path: '/responses', modelId: this.modelId }));
    const body = JSON.stringify({ ...args, stream: true });
    // The provider's configured headers (key, user agent) do not change while the process runs: made once.
    this.configHeaders ??= lowerCased({ 'content-type': 'application/json' }, this.internals.config.headers());
    const headers =
      options.headers && Object.keys(options.headers).length > 0
        ? lowerCased({ ...this.configHeaders }, options.headers)
        : this.configHeaders;
    const response = await post(url, this.endpoint.agentFor(url), body, headers, options.abortSignal);
    const status = response.statusCode ?? 0;
    if (status < 200 || status > 299) throw await failedResponse(response, { url: url.href, body, headers: headersOf(response) });

    let answer!: ResponsesParts;
    const stream = eventStream(response, (controller) => {
      controller.enqueue({ type: 'stream-start', warnings });
      answer = new ResponsesParts(controller, { store, metadataKey: providerOptionsName });
      return answer;
    });
    // As the AI SDK's: an error before any output fails the call itself (its status decides retries).
    const early = await answer.ready;
    if (early) {
      await stream.cancel().catch(() => {});
      throw new APICallError({
        message: early.message ?? 'OpenAI stream failed before any output was generated',
        url: url.href,
        requestBodyValues: body,
        statusCode: early.statusCode,
        responseHeaders: headersOf(response),
        responseBody: JSON.stringify(early.frame),
        data: early.frame,
        isRetryable: early.isRetryable,
      });
    }
    // The headers of an answer that streams are made only if asked for (nothing in Agentry asks): Node parses them on first read.
    return { stream, request: { body }, response: lazyHeaders(response) };
  }
}

/** `into` with `headers`' defined values added under lower-case names. */
function lowerCased(into: Record<string, string>, headers: Record<string, string | undefined>): Record<string, string> {
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) into[name.toLowerCase()] = value;
  return into;
}

/** The event types the AI SDK models (its zod union); of these, those that are not output yet. */
const MODELED = new Set([
  'error',
  'response.apply_patch_call_operation_diff.delta',
  'response.apply_patch_call_operation_diff.done',
  'response.code_interpreter_call_code.delta',
  'response.code_interpreter_call_code.done',
  'response.completed',
  'response.created',
  'response.custom_tool_call_input.delta',
  'response.failed',
  'response.function_call_arguments.delta',
  'response.function_call_arguments.done',
  'response.image_generation_call.partial_image',
  'response.incomplete',
  'response.output_item.added',
  'response.output_item.done',
  'response.output_text.annotation.added',
  'response.output_text.delta',
  'response.refusal.delta',
  'response.refusal.done',
  'response.reasoning_summary_part.added',
  'response.reasoning_summary_part.done',
  'response.reasoning_summary_text.delta',
]);
const NOT_OUTPUT = new Set(['response.created', 'response.failed', 'error']);

/** A stream error as the AI SDK reads it: the message, code and type the provider gave. */
interface StreamError {
  message: string;
  code: string | number | undefined;
  type: string | undefined;
}

type Event = Record<string, unknown> & { type: string };
type Item = Record<string, unknown> & { type: string; id?: string };

interface EarlyError {
  message: string | undefined;
  statusCode: number;
  isRetryable: boolean;
  frame: unknown;
}

/** Turns a Responses answer's events into stream parts, as `@ai-sdk/openai`'s doStream does. */
class ResponsesParts {
  /** Settles once the first output event came (or the stream ended): with the error that came before any. */
  readonly ready: Promise<EarlyError | undefined>;
  private settleReady!: (early: EarlyError | undefined) => void;
  private waiting = true;
  private ignoring = false;

  private finishReason: LanguageModelV3FinishReason = { unified: 'other', raw: undefined };
  private usage: Record<string, unknown> | undefined;
  private terminal = false;
  private streamError = false;
  private responseId: string | null = null;
  private serviceTier: string | undefined;
  private hasFunctionCall = false;
  private hasRefusal = false;
  private messagePhase: string | undefined;
  private readonly toolCalls = new Map<number, { toolName: string; toolCallId: string }>();
  private readonly reasoning = new Map<
    string,
    { encryptedContent: unknown; parts: Map<number, 'active' | 'can-conclude' | 'concluded'> }
  >();

  constructor(
    private readonly controller: Controller,
    private readonly options: { store: boolean | undefined; metadataKey: string },
  ) {
    this.ready = new Promise((resolve) => {
      this.settleReady = resolve;
    });
  }

  /** Provider metadata under the provider's key (`openai`), as the AI SDK puts it. */
  private meta(fields: Record<string, unknown>): SharedV3ProviderMetadata {
    return { [this.options.metadataKey]: fields } as SharedV3ProviderMetadata;
  }

  event(data: string, name: string | undefined) {
    if (this.ignoring) return;
    // OpenAI names each event by its type: one this does not read (in_progress, content_part.*, the *.done
    // holding the whole text again) is not parsed at all. Unnamed events are parsed to learn their type.
    if (name !== undefined && !MODELED.has(name)) return;
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch (cause) {
      return this.invalid(new JSONParseError({ text: data, cause }));
    }
    if (!isObject(value) || typeof value.type !== 'string')
      return this.invalid(new TypeValidationError({ value, cause: new Error('an event needs a string type') }));
    const event = value as Event;
    if (!MODELED.has(event.type)) return; // response.in_progress, content_part.*, *.done and types to come: nothing read.
    const problem = eventProblem(event);
    if (problem) return this.invalid(new TypeValidationError({ value, cause: new Error(problem) }));
    if (this.waiting) {
      const early = earlyError(event);
      if (early) {
        this.ignoring = true;
        this.waiting = false;
        this.settleReady(early);
        return;
      }
      if (!NOT_OUTPUT.has(event.type)) this.ready_();
    }
    this.handle(event);
  }

  private ready_() {
    if (!this.waiting) return;
    this.waiting = false;
    this.settleReady(undefined);
  }

  /** An event that is not JSON or not of its type's shape: an error part, as the AI SDK's failed parse. */
  private invalid(error: Error) {
    this.ready_();
    this.streamError = true;
    this.finishReason = { unified: 'error', raw: undefined };
    this.controller.enqueue({ type: 'error', error });
  }

  private handle(e: Event) {
    const c = this.controller;
    switch (e.type) {
      case 'response.created': {
        const response = e.response as { id: string; created_at: number; model: string };
        this.responseId = response.id;
        c.enqueue({ type: 'response-metadata', id: response.id, timestamp: new Date(response.created_at * 1000), modelId: response.model });
        return;
      }
      case 'response.output_item.added':
        return this.itemAdded(e.output_index as number, e.item as Item);
      case 'response.output_item.done':
        return this.itemDone(e.output_index as number, e.item as Item);
      case 'response.function_call_arguments.delta': {
        const call = this.toolCalls.get(e.output_index as number);
        if (call) c.enqueue({ type: 'tool-input-delta', id: call.toolCallId, delta: e.delta as string });
        return;
      }
      case 'response.output_text.delta':
        c.enqueue({ type: 'text-delta', id: e.item_id as string, delta: e.delta as string });
        return;
      case 'response.refusal.delta':
        this.hasRefusal = true;
        c.enqueue({ type: 'text-delta', id: e.item_id as string, delta: e.delta as string });
        return;
      case 'response.refusal.done':
        this.hasRefusal = true;
        return;
      case 'response.reasoning_summary_part.added':
        return this.summaryPartAdded(e.item_id as string, e.summary_index as number);
      case 'response.reasoning_summary_text.delta':
        c.enqueue({
          type: 'reasoning-delta',
          id: `${e.item_id}:${e.summary_index}`,
          delta: e.delta as string,
          providerMetadata: this.meta({ itemId: e.item_id }),
        });
        return;
      case 'response.reasoning_summary_part.done': {
        const active = this.reasoning.get(e.item_id as string);
        if (this.options.store) {
          c.enqueue({ type: 'reasoning-end', id: `${e.item_id}:${e.summary_index}`, providerMetadata: this.meta({ itemId: e.item_id }) });
          active?.parts.set(e.summary_index as number, 'concluded');
        } else {
          active?.parts.set(e.summary_index as number, 'can-conclude');
        }
        return;
      }
      case 'response.completed':
      case 'response.incomplete': {
        this.terminal = true;
        const response = e.response as {
          incomplete_details?: { reason?: string | null } | null;
          usage?: Record<string, unknown> | null;
          service_tier?: unknown;
        };
        const reason = response.incomplete_details?.reason ?? undefined;
        if (!this.streamError) {
          this.finishReason = { unified: finishReasonOf(reason, this.hasFunctionCall, this.hasRefusal), raw: reason };
        }
        this.usage = response.usage ?? undefined;
        if (typeof response.service_tier === 'string') this.serviceTier = response.service_tier;
        return;
      }
      case 'response.failed': {
        this.terminal = true;
        const response = e.response as {
          error?: unknown;
          incomplete_details?: { reason?: string | null } | null;
          usage?: Record<string, unknown> | null;
          service_tier?: unknown;
        };
        const reason = response.incomplete_details?.reason ?? undefined;
        this.finishReason = { unified: reason ? finishReasonOf(reason, this.hasFunctionCall, false) : 'error', raw: reason ?? 'error' };
        this.usage = response.usage ?? undefined;
        if (!this.streamError && response.error != null) {
          this.streamError = true;
          const frame = {
            type: 'response.failed',
            sequence_number: e.sequence_number,
            response: { error: response.error, incomplete_details: response.incomplete_details, service_tier: response.service_tier },
          };
          c.enqueue({ type: 'error', error: providerStreamError(frame) ?? frame });
        }
        return;
      }
      case 'error':
        this.streamError = true;
        this.finishReason = { unified: 'error', raw: 'error' };
        c.enqueue({ type: 'error', error: providerStreamError(e) ?? e });
        return;
      default:
        // Hosted tools' events (code interpreter, image generation, patches, custom tools) and annotations:
        // only a call with provider tools has them, and those calls go to the AI SDK.
        return;
    }
  }

  private itemAdded(outputIndex: number, item: Item) {
    const c = this.controller;
    if (item.type === 'function_call') {
      const call = { toolName: item.name as string, toolCallId: item.call_id as string };
      this.toolCalls.set(outputIndex, call);
      c.enqueue({ type: 'tool-input-start', id: call.toolCallId, toolName: call.toolName });
    } else if (item.type === 'message') {
      this.messagePhase = (item.phase as string | null | undefined) ?? undefined;
      c.enqueue({
        type: 'text-start',
        id: item.id as string,
        providerMetadata: this.meta({ itemId: item.id, ...(item.phase != null && { phase: item.phase }) }),
      });
    } else if (item.type === 'reasoning') {
      this.reasoning.set(item.id as string, { encryptedContent: item.encrypted_content, parts: new Map([[0, 'active']]) });
      c.enqueue({
        type: 'reasoning-start',
        id: `${item.id}:0`,
        providerMetadata: this.meta({ itemId: item.id, reasoningEncryptedContent: item.encrypted_content ?? null }),
      });
    }
  }

  private itemDone(outputIndex: number, item: Item) {
    const c = this.controller;
    if (item.type === 'message') {
      const phase = (item.phase as string | null | undefined) ?? this.messagePhase;
      this.messagePhase = undefined;
      c.enqueue({
        type: 'text-end',
        id: item.id as string,
        providerMetadata: this.meta({ itemId: item.id, ...(phase != null && { phase }) }),
      });
    } else if (item.type === 'function_call') {
      this.toolCalls.delete(outputIndex);
      this.hasFunctionCall = true;
      const callId = item.call_id as string;
      c.enqueue({
        type: 'tool-input-end',
        id: callId,
        ...(item.namespace != null && { providerMetadata: this.meta({ namespace: item.namespace }) }),
      });
      c.enqueue({
        type: 'tool-call',
        toolCallId: callId,
        toolName: item.name as string,
        input: item.arguments as string,
        providerMetadata: this.meta({
          itemId: item.id,
          ...(item.async != null && { async: item.async }),
          ...(item.namespace != null && { namespace: item.namespace }),
        }),
      });
    } else if (item.type === 'reasoning') {
      const active = this.reasoning.get(item.id as string);
      if (!active) return;
      for (const [index, status] of active.parts) {
        if (status !== 'active' && status !== 'can-conclude') continue;
        c.enqueue({
          type: 'reasoning-end',
          id: `${item.id}:${index}`,
          providerMetadata: this.meta({ itemId: item.id, reasoningEncryptedContent: item.encrypted_content ?? null }),
        });
      }
      this.reasoning.delete(item.id as string);
    }
  }

  private summaryPartAdded(itemId: string, index: number) {
    if (index === 0) return; // the first part was opened with its item
    const active = this.reasoning.get(itemId);
    if (!active) return;
    active.parts.set(index, 'active');
    for (const [i, status] of active.parts) {
      if (status !== 'can-conclude') continue;
      this.controller.enqueue({ type: 'reasoning-end', id: `${itemId}:${i}`, providerMetadata: this.meta({ itemId }) });
      active.parts.set(i, 'concluded');
    }
    this.controller.enqueue({
      type: 'reasoning-start',
      id: `${itemId}:${index}`,
      providerMetadata: this.meta({ itemId, reasoningEncryptedContent: active.encryptedContent ?? null }),
    });
  }

  flush() {
    this.ready_();
    if (!this.terminal && !this.streamError) {
      // The body ended cleanly but the answer did not: never a finished answer.
      this.streamError = true;
      this.finishReason = { unified: 'error', raw: undefined };
      this.controller.enqueue({
        type: 'error',
        error: new InvalidResponseDataError({ data: undefined, message: 'the Responses stream ended before response.completed' }),
      });
    }
    this.controller.enqueue({
      type: 'finish',
      finishReason: this.finishReason,
      usage: usageOf(this.usage),
      providerMetadata: this.meta({
        responseId: this.responseId,
        ...(this.serviceTier !== undefined && { serviceTier: this.serviceTier }),
      }),
    });
  }

  ended() {
    this.ready_();
  }
}

/** `@ai-sdk/openai`'s mapOpenAIResponseFinishReason: a truncated answer is `length`, never a stop. */
function finishReasonOf(reason: string | undefined, hasFunctionCall: boolean, hasRefusal: boolean): LanguageModelV3FinishReason['unified'] {
  switch (reason) {
    case undefined:
      return hasFunctionCall ? 'tool-calls' : hasRefusal ? 'content-filter' : 'stop';
    case 'max_output_tokens':
      return 'length';
    case 'content_filter':
      return 'content-filter';
    default:
      return hasFunctionCall ? 'tool-calls' : 'other';
  }
}

/** `@ai-sdk/openai`'s convertOpenAIResponsesUsage: cached and reasoning tokens split out. */
function usageOf(usage: Record<string, unknown> | undefined): LanguageModelV3Usage {
  if (usage == null) {
    return {
      inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      raw: undefined,
    };
  }
  const input = usage.input_tokens as number;
  const output = usage.output_tokens as number;
  const inputDetails = usage.input_tokens_details as
    | { cached_tokens?: number | null; cache_write_tokens?: number | null }
    | null
    | undefined;
  const cached = inputDetails?.cached_tokens ?? 0;
  const cacheWrite = inputDetails?.cache_write_tokens ?? undefined;
  const reasoning = (usage.output_tokens_details as { reasoning_tokens?: number | null } | null | undefined)?.reasoning_tokens ?? 0;
  return {
    inputTokens: { total: input, noCache: input - cached - (cacheWrite ?? 0), cacheRead: cached, cacheWrite },
    outputTokens: { total: output, text: output - reasoning, reasoning },
    raw: usage as LanguageModelV3Usage['raw'],
  };
}

/** The provider's error in a stream frame (`error`, or `response.failed` with an error), as `@ai-sdk/openai` reads it. */
function streamErrorOf(frame: Event): StreamError | undefined {
  if (frame.type === 'response.failed') {
    const error = (frame.response as { error?: unknown }).error;
    if (!isObject(error) || typeof error.message !== 'string') return undefined;
    return { message: error.message, code: stringOrNumber(error.code), type: 'response.failed' };
  }
  const nested = isObject(frame.error) ? frame.error : undefined;
  const error = nested ?? frame;
  if (typeof error.message !== 'string') return undefined;
  if (!(nested || typeof error.type === 'string' || 'code' in error || 'param' in error)) return undefined;
  return { message: error.message, code: stringOrNumber(error.code), type: typeof error.type === 'string' ? error.type : undefined };
}

const stringOrNumber = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? v : undefined);

/** The HTTP status an error's code or type stands for (`@ai-sdk/openai`'s getStatusCode). */
function statusOf(error: StreamError): number {
  const code = typeof error.code === 'string' && /^\d{3}$/.test(error.code) ? Number(error.code) : error.code;
  if (typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599) return code;
  const words = [error.code, error.type]
    .filter((v) => v !== undefined)
    .join(' ')
    .toLowerCase();
  if (words.includes('insufficient_quota') || words.includes('rate_limit')) return 429;
  if (words.includes('authentication')) return 401;
  if (words.includes('permission')) return 403;
  if (words.includes('not_found')) return 404;
  if (['invalid', 'bad_request', 'context_length'].some((w) => words.includes(w))) return 400;
  if (words.includes('overload')) return 503;
  if (words.includes('timeout')) return 504;
  return 500;
}

function retryable(error: StreamError, status: number): boolean {
  if (error.code === 'insufficient_quota' || error.type === 'insufficient_quota') return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The error part's value for a provider's stream error, as `@ai-sdk/openai`'s createOpenAIProviderStreamError makes it. */
function providerStreamError(frame: Event) {
  const error = streamErrorOf(frame);
  if (!error) return undefined;
  const statusCode = statusOf(error);
  return { message: error.message, type: error.type, code: error.code, statusCode, isRetryable: retryable(error, statusCode), data: frame };
}

/** An `error` (or a failed response with an error) before any output: the call fails with it. */
function earlyError(event: Event): EarlyError | undefined {
  if (event.type !== 'error' && !(event.type === 'response.failed' && (event.response as { error?: unknown }).error != null))
    return undefined;
  const error = streamErrorOf(event);
  const statusCode = error ? statusOf(error) : 500;
  return { message: error?.message, statusCode, isRetryable: error ? retryable(error, statusCode) : true, frame: event };
}

const isString = (v: unknown) => typeof v === 'string';
const isNumber = (v: unknown) => typeof v === 'number';

/**
 * What is wrong with an event, for the fields that are read (the AI SDK's event schemas, checked by
 * hand); undefined when it is usable.
 */
function eventProblem(e: Event): string | undefined {
  switch (e.type) {
    case 'response.created': {
      const r = e.response;
      if (!isObject(r) || !isString(r.id) || !isNumber(r.created_at) || !isString(r.model)) {
        return 'response.created needs response.id, created_at and model';
      }
      return undefined;
    }
    case 'response.output_item.added':
    case 'response.output_item.done': {
      if (!isNumber(e.output_index) || !isObject(e.item) || !isString(e.item.type)) return `${e.type} needs output_index and item.type`;
      const item = e.item;
      if (item.type === 'function_call') {
        if (!isString(item.call_id) || !isString(item.name)) return 'a function_call item needs call_id and name';
        if (e.type === 'response.output_item.done' && !isString(item.arguments)) return 'a done function_call item needs its arguments';
        if (!optional(item.id, 'string')) return 'a function_call item’s id must be a string';
      } else if (item.type === 'message') {
        if (!isString(item.id) || !optional(item.phase, 'string')) return 'a message item needs a string id';
      } else if (item.type === 'reasoning') {
        if (!isString(item.id) || !optional(item.encrypted_content, 'string')) return 'a reasoning item needs a string id';
      }
      return undefined;
    }
    case 'response.function_call_arguments.delta':
      return isNumber(e.output_index) && isString(e.delta) ? undefined : 'arguments deltas need output_index and delta';
    case 'response.output_text.delta':
    case 'response.refusal.delta':
      return isString(e.item_id) && isString(e.delta) ? undefined : `${e.type} needs item_id and delta`;
    case 'response.reasoning_summary_part.added':
    case 'response.reasoning_summary_part.done':
      return isString(e.item_id) && isNumber(e.summary_index) ? undefined : `${e.type} needs item_id and summary_index`;
    case 'response.reasoning_summary_text.delta':
      return isString(e.item_id) && isNumber(e.summary_index) && isString(e.delta)
        ? undefined
        : `${e.type} needs item_id, summary_index and delta`;
    case 'response.completed':
    case 'response.incomplete':
    case 'response.failed': {
      const r = e.response;
      if (!isObject(r)) return `${e.type} needs a response`;
      if (r.incomplete_details != null && (!isObject(r.incomplete_details) || !optional(r.incomplete_details.reason, 'string'))) {
        return 'response.incomplete_details.reason must be a string';
      }
      if (r.usage != null) {
        const u = r.usage;
        if (!isObject(u) || !isNumber(u.input_tokens) || !isNumber(u.output_tokens))
          return 'response.usage needs input_tokens and output_tokens';
        const inDetails = u.input_tokens_details;
        if (
          inDetails != null &&
          (!isObject(inDetails) || !optional(inDetails.cached_tokens, 'number') || !optional(inDetails.cache_write_tokens, 'number'))
        ) {
          return 'usage.input_tokens_details must hold numbers';
        }
        const outDetails = u.output_tokens_details;
        if (outDetails != null && (!isObject(outDetails) || !optional(outDetails.reasoning_tokens, 'number'))) {
          return 'usage.output_tokens_details must hold numbers';
        }
      }
      if (e.type === 'response.failed' && r.error != null && (!isObject(r.error) || !isString(r.error.message))) {
        return 'response.error needs a message';
      }
      return undefined;
    }
    case 'error': {
      const error = isObject(e.error) ? e.error : e;
      return isString(error.message) ? undefined : 'an error event needs a message';
    }
    default:
      return undefined;
  }
}
