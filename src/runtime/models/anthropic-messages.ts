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
 * Anthropic's Messages API (`anthropic/*` models) with a streamed call of its own: `@ai-sdk/anthropic`'s
 * doStream pipes each answer through fetch, a tee and four web-stream transforms and validates every
 * event against the zod union of the Messages events, ~1.6-3.1 ms of CPU a call (docs/benchmarks.md,
 * "Real models, second round"). Here the request is the AI SDK model's own (its `getArgs`, headers and
 * URL: the same messages, tools, betas, warnings), sent over node:http with kept-alive connections,
 * and the events are parsed as they arrive into the parts the AI SDK's doStream emits (a thinking
 * block's signature and a redacted block's data go back to the model in the next step). `doGenerate`
 * is the AI SDK model's.
 *
 * What this gives up: zod's check of each event (the fields read are checked by hand); a call with
 * provider tools, `providerOptions`, raw chunks or a JSON answer asked through Anthropic's json tool
 * goes to the AI SDK's doStream, whole (Agentry sets none of the first three; the fourth only for models
 * without native structured output); server tools' blocks, citations and compaction are not read.
 * One change on purpose: an event type Anthropic adds later is ignored (its versioning policy asks
 * clients to), where the AI SDK's schema fails the stream on it.
 */

/** The AI SDK Anthropic model's private members this uses (checked when the model is wrapped). */
interface MessagesInternals {
  getArgs(options: LanguageModelV3CallOptions & { stream: true; userSuppliedBetas: Set<string> }): Promise<{
    args: Record<string, unknown>;
    warnings: SharedV3Warning[];
    betas: Set<string>;
    usesJsonResponseTool: boolean;
  }>;
  getBetasFromHeaders(headers: LanguageModelV3CallOptions['headers']): Promise<Set<string>>;
  getHeaders(options: { betas: Set<string>; headers: LanguageModelV3CallOptions['headers'] }): Promise<Record<string, string | undefined>>;
  buildRequestUrl(streaming: boolean): string;
  transformRequestBody(args: Record<string, unknown>, betas: Set<string>): Record<string, unknown>;
}

const INTERNALS = ['getArgs', 'getBetasFromHeaders', 'getHeaders', 'buildRequestUrl', 'transformRequestBody'] as const;

/** One Anthropic endpoint as configured: its models share its kept-alive connections. */
export class MessagesEndpoint {
  private agent?: http.Agent;

  /** `sdk`'s streamed calls made here; its other calls stay the AI SDK's. */
  model(sdk: LanguageModelV3): LanguageModelV3 {
    const internals = sdk as unknown as Record<string, unknown>;
    if (INTERNALS.some((name) => typeof internals[name] !== 'function')) {
      // A new @ai-sdk/anthropic that moved these: fail at once rather than stream differently.
      throw new Error(`@ai-sdk/anthropic: the Messages model no longer has ${INTERNALS.join(', ')}; anthropic-messages.ts needs updating`);
    }
    return new MessagesModel(sdk, sdk as unknown as MessagesInternals, this);
  }

  agentFor(url: URL): http.Agent {
    this.agent ??= keepAliveAgent(url);
    return this.agent;
  }
}

class MessagesModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3';
  readonly provider: string;
  readonly modelId: string;

  constructor(
    private readonly sdk: LanguageModelV3,
    private readonly internals: MessagesInternals,
    private readonly endpoint: MessagesEndpoint,
  ) {
    this.provider = sdk.provider;
    this.modelId = sdk.modelId;
  }

  get supportedUrls() {
    return this.sdk.supportedUrls;
  }

  /**
   * The provider's configured headers (key, version, user agent) do not change while the process runs:
   * the AI SDK rebuilt them twice a call (~0.1 ms), so a call without headers of its own reuses them, by betas.
   */
  private configBetas?: Set<string>;
  private readonly headersByBetas = new Map<string, Record<string, string>>();

  private async configHeaders(betas: Set<string>) {
    const key = [...betas].join(',');
    let headers = this.headersByBetas.get(key);
    if (!headers) {
      headers = await this.headersOf(betas, undefined);
      if (this.headersByBetas.size < 64) this.headersByBetas.set(key, headers);
    }
    return headers;
  }

  private async headersOf(betas: Set<string>, own: LanguageModelV3CallOptions['headers']) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    for (const [name, value] of Object.entries(await this.internals.getHeaders({ betas, headers: own }))) {
      if (value !== undefined) headers[name.toLowerCase()] = value;
    }
    return headers;
  }

  doGenerate(options: LanguageModelV3CallOptions) {
    return this.sdk.doGenerate(options);
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const providerTools = options.tools?.some((tool) => tool.type === 'provider');
    const hasOptions = options.providerOptions && Object.keys(options.providerOptions).length > 0;
    if (providerTools || hasOptions || options.includeRawChunks) return this.sdk.doStream(options);

    const ownHeaders = options.headers && Object.keys(options.headers).length > 0;
    if (!ownHeaders) this.configBetas ??= await this.internals.getBetasFromHeaders(undefined);
    const userSuppliedBetas = ownHeaders ? await this.internals.getBetasFromHeaders(options.headers) : this.configBetas!;
    const { args, warnings, betas, usesJsonResponseTool } = await this.internals.getArgs({ ...options, stream: true, userSuppliedBetas });
    // The JSON answer comes as a tool's input, held back and turned into text: the AI SDK's reading does it.
    if (usesJsonResponseTool) return this.sdk.doStream(options);

    const url = new URL(this.internals.buildRequestUrl(true));
    const body = JSON.stringify(this.internals.transformRequestBody(args, betas));
    const headers = ownHeaders ? await this.headersOf(betas, options.headers) : await this.configHeaders(betas);
    const response = await post(url, this.endpoint.agentFor(url), body, headers, options.abortSignal);
    const status = response.statusCode ?? 0;
    if (status < 200 || status > 299) throw await failedResponse(response, { url: url.href, body, headers: headersOf(response) });

    let answer!: MessagesParts;
    const stream = eventStream(response, (controller) => {
      controller.enqueue({ type: 'stream-start', warnings });
      answer = new MessagesParts(controller);
      return answer;
    });
    // As the AI SDK's: an error event first of all fails the call itself (overloaded: retryable 529).
    const early = await answer.ready;
    if (early) {
      await stream.cancel().catch(() => {});
      throw new APICallError({
        message: early.message,
        url: url.href,
        requestBodyValues: body,
        statusCode: early.type === 'overloaded_error' ? 529 : 500,
        responseHeaders: headersOf(response),
        responseBody: JSON.stringify(early),
        isRetryable: early.type === 'overloaded_error',
      });
    }
    // The headers of an answer that streams are made only if asked for (nothing in Agentry asks): Node parses them on first read.
    return { stream, request: { body }, response: lazyHeaders(response) };
  }
}

type Event = Record<string, unknown> & { type: string };
type Block = { type: 'text' } | { type: 'reasoning' } | { type: 'tool-call'; toolCallId: string; toolName: string; input: string };

interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
}

/** Turns a Messages answer's events into stream parts, as `@ai-sdk/anthropic`'s doStream does. */
class MessagesParts {
  /** Settles with the first event: the provider's error when it is an error event. */
  readonly ready: Promise<{ type: string; message: string } | undefined>;
  private settleReady!: (early: { type: string; message: string } | undefined) => void;
  private waiting = true;
  /** After a second message began while one was open, nothing more is read (the AI SDK's rule). */
  private stopped = false;

  private finishReason: LanguageModelV3FinishReason = { unified: 'other', raw: undefined };
  private readonly usage: Usage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  private rawUsage: Record<string, unknown> | undefined;
  private cacheCreationInputTokens: number | null = null;
  private stopSequence: string | null = null;
  private messageOpen = false;
  private messageId: unknown;
  private blockType: string | undefined;
  private readonly blocks = new Map<number, Block>();

  constructor(private readonly controller: Controller) {
    this.ready = new Promise((resolve) => {
      this.settleReady = resolve;
    });
  }

  private ready_(early?: { type: string; message: string }) {
    if (!this.waiting) return;
    this.waiting = false;
    this.settleReady(early);
  }

  event(data: string, name: string | undefined) {
    // Anthropic names each event by its type: a keep-alive ping is not parsed.
    if (this.stopped || name === 'ping') return;
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch (cause) {
      return this.error(new JSONParseError({ text: data, cause }));
    }
    if (!isObject(value) || typeof value.type !== 'string') {
      return this.error(new TypeValidationError({ value, cause: new Error('an event needs a string type') }));
    }
    const event = value as Event;
    const problem = eventProblem(event);
    if (problem) return this.error(new TypeValidationError({ value, cause: new Error(problem) }));
    if (event.type === 'ping') return;
    if (this.waiting && event.type === 'error') {
      const error = event.error as { type: string; message: string };
      this.stopped = true;
      return this.ready_(error);
    }
    this.handle(event);
    this.ready_();
  }

  private error(error: unknown) {
    this.ready_();
    this.controller.enqueue({ type: 'error', error });
  }

  private handle(e: Event) {
    const c = this.controller;
    switch (e.type) {
      case 'message_start':
        return this.messageStart(e.message as Record<string, unknown>, e);
      case 'content_block_start': {
        const index = e.index as number;
        const block = e.content_block as Record<string, unknown> & { type: string };
        if (block.type === 'fallback') return;
        this.blockType = block.type;
        if (block.type === 'text') {
          this.blocks.set(index, { type: 'text' });
          c.enqueue({ type: 'text-start', id: String(index) });
        } else if (block.type === 'thinking') {
          this.blocks.set(index, { type: 'reasoning' });
          c.enqueue({ type: 'reasoning-start', id: String(index) });
        } else if (block.type === 'redacted_thinking') {
          this.blocks.set(index, { type: 'reasoning' });
          c.enqueue({
            type: 'reasoning-start',
            id: String(index),
            providerMetadata: { anthropic: { redactedData: block.data as string } },
          });
        } else if (block.type === 'tool_use') {
          const input = isObject(block.input) && Object.keys(block.input).length > 0 ? JSON.stringify(block.input) : '';
          this.blocks.set(index, { type: 'tool-call', toolCallId: block.id as string, toolName: block.name as string, input });
          c.enqueue({ type: 'tool-input-start', id: block.id as string, toolName: block.name as string });
        }
        // Server tools' blocks (web search, code execution, MCP): only a call with provider tools has them.
        return;
      }
      case 'content_block_stop': {
        const index = e.index as number;
        const block = this.blocks.get(index);
        this.blocks.delete(index);
        this.blockType = undefined;
        if (block?.type === 'text') c.enqueue({ type: 'text-end', id: String(index) });
        else if (block?.type === 'reasoning') c.enqueue({ type: 'reasoning-end', id: String(index) });
        else if (block?.type === 'tool-call') {
          c.enqueue({ type: 'tool-input-end', id: block.toolCallId });
          c.enqueue({
            type: 'tool-call',
            toolCallId: block.toolCallId,
            toolName: block.toolName,
            input: block.input === '' ? '{}' : block.input,
          });
        }
        return;
      }
      case 'content_block_delta': {
        const index = e.index as number;
        const delta = e.delta as Record<string, unknown> & { type: string };
        if (delta.type === 'text_delta') c.enqueue({ type: 'text-delta', id: String(index), delta: delta.text as string });
        else if (delta.type === 'thinking_delta')
          c.enqueue({ type: 'reasoning-delta', id: String(index), delta: delta.thinking as string });
        else if (delta.type === 'signature_delta') {
          if (this.blockType === 'thinking') {
            c.enqueue({
              type: 'reasoning-delta',
              id: String(index),
              delta: '',
              providerMetadata: { anthropic: { signature: delta.signature as string } },
            });
          }
        } else if (delta.type === 'input_json_delta') {
          const json = delta.partial_json as string;
          const block = this.blocks.get(index);
          if (json.length === 0 || block?.type !== 'tool-call') return;
          c.enqueue({ type: 'tool-input-delta', id: block.toolCallId, delta: json });
          block.input += json;
        }
        // citations_delta, compaction_delta: only with documents or context management asked for.
        return;
      }
      case 'message_delta':
        return this.messageDelta(e);
      case 'message_stop':
        return this.messageStop();
      case 'error':
        c.enqueue({ type: 'error', error: e.error });
        return;
      default:
        // An event type this does not know: ignored, as Anthropic's versioning policy asks.
        return;
    }
  }

  private messageStart(message: Record<string, unknown>, event: Event) {
    if (this.messageOpen) {
      if (this.messageId === message.id) return;
      this.stopped = true;
      this.controller.enqueue({
        type: 'error',
        error: new InvalidResponseDataError({
          data: event,
          message: `Received message_start for message ${JSON.stringify(message.id)} while message ${JSON.stringify(this.messageId)} is still open.`,
        }),
      });
      return;
    }
    this.messageOpen = true;
    this.messageId = message.id;
    const usage = message.usage as Record<string, unknown>;
    this.usage.input_tokens = usage.input_tokens as number;
    this.usage.cache_read_input_tokens = (usage.cache_read_input_tokens as number | null | undefined) ?? 0;
    this.usage.cache_creation_input_tokens = (usage.cache_creation_input_tokens as number | null | undefined) ?? 0;
    this.rawUsage = { ...usage };
    this.cacheCreationInputTokens = (usage.cache_creation_input_tokens as number | null | undefined) ?? null;
    if (message.stop_reason != null) {
      const raw = message.stop_reason as string;
      this.finishReason = { unified: finishReasonOf(raw), raw };
    }
    this.controller.enqueue({
      type: 'response-metadata',
      id: (message.id as string | null | undefined) ?? undefined,
      modelId: (message.model as string | null | undefined) ?? undefined,
    });
  }

  private messageDelta(e: Event) {
    const usage = e.usage as Record<string, unknown>;
    const delta = e.delta as { stop_reason?: string | null; stop_sequence?: string | null };
    if (usage.input_tokens != null) this.usage.input_tokens = usage.input_tokens as number;
    this.usage.output_tokens = usage.output_tokens as number;
    if (usage.output_tokens_details != null)
      this.usage.output_tokens_details = usage.output_tokens_details as Usage['output_tokens_details'];
    if (usage.cache_read_input_tokens != null) this.usage.cache_read_input_tokens = usage.cache_read_input_tokens as number;
    if (usage.cache_creation_input_tokens != null) {
      this.usage.cache_creation_input_tokens = usage.cache_creation_input_tokens as number;
      this.cacheCreationInputTokens = usage.cache_creation_input_tokens as number;
    }
    this.finishReason = { unified: finishReasonOf(delta.stop_reason ?? undefined), raw: delta.stop_reason ?? undefined };
    this.stopSequence = delta.stop_sequence ?? null;
    this.rawUsage = { ...this.rawUsage, ...usage };
  }

  private messageStop() {
    this.messageOpen = false;
    this.messageId = undefined;
    const metadata = {
      usage: this.rawUsage ?? null,
      cacheCreationInputTokens: this.cacheCreationInputTokens,
      stopSequence: this.stopSequence,
      iterations: null,
      container: null,
      contextManagement: null,
    };
    this.controller.enqueue({
      type: 'finish',
      finishReason: this.finishReason,
      usage: usageOf(this.usage, this.rawUsage),
      providerMetadata: { anthropic: metadata } as SharedV3ProviderMetadata,
    });
  }

  /** A body that ended without message_stop has no finish part: the step driver calls it cut (as with the AI SDK). */
  flush() {
    this.ready_();
  }

  ended() {
    this.ready_();
  }
}

/** `@ai-sdk/anthropic`'s mapAnthropicStopReason: an answer cut at max_tokens is `length`, never a stop. */
function finishReasonOf(reason: string | undefined): LanguageModelV3FinishReason['unified'] {
  switch (reason) {
    case 'pause_turn':
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'refusal':
      return 'content-filter';
    case 'tool_use':
      return 'tool-calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    default:
      return 'other';
  }
}

/** `@ai-sdk/anthropic`'s convertAnthropicMessagesUsage (without server-side iterations): cache reads and writes counted in. */
function usageOf(usage: Usage, rawUsage: Record<string, unknown> | undefined): LanguageModelV3Usage {
  const reasoning = usage.output_tokens_details?.thinking_tokens ?? undefined;
  return {
    inputTokens: {
      total: usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens,
      noCache: usage.input_tokens,
      cacheRead: usage.cache_read_input_tokens,
      cacheWrite: usage.cache_creation_input_tokens,
    },
    outputTokens: { total: usage.output_tokens, text: reasoning == null ? undefined : usage.output_tokens - reasoning, reasoning },
    raw: (rawUsage ?? usage) as LanguageModelV3Usage['raw'],
  };
}

const isString = (v: unknown) => typeof v === 'string';
const isNumber = (v: unknown) => typeof v === 'number';

/**
 * What is wrong with an event, for the fields that are read (the AI SDK's event schemas, checked by
 * hand); undefined when it is usable.
 */
function eventProblem(e: Event): string | undefined {
  switch (e.type) {
    case 'message_start': {
      const m = e.message;
      if (!isObject(m) || !optional(m.id, 'string') || !optional(m.model, 'string') || !optional(m.stop_reason, 'string')) {
        return 'message_start needs a message with string id, model and stop_reason';
      }
      const u = m.usage;
      if (!isObject(u) || !isNumber(u.input_tokens)) return 'message.usage.input_tokens must be a number';
      if (!optional(u.cache_read_input_tokens, 'number') || !optional(u.cache_creation_input_tokens, 'number')) {
        return 'message.usage cache tokens must be numbers';
      }
      return undefined;
    }
    case 'content_block_start': {
      const b = e.content_block;
      if (!isNumber(e.index) || !isObject(b) || !isString(b.type)) return 'content_block_start needs index and content_block.type';
      if (b.type === 'tool_use' && (!isString(b.id) || !isString(b.name))) return 'a tool_use block needs id and name';
      if (b.type === 'redacted_thinking' && !isString(b.data)) return 'a redacted_thinking block needs data';
      return undefined;
    }
    case 'content_block_delta': {
      const d = e.delta;
      if (!isNumber(e.index) || !isObject(d) || !isString(d.type)) return 'content_block_delta needs index and delta.type';
      const field = { text_delta: 'text', thinking_delta: 'thinking', signature_delta: 'signature', input_json_delta: 'partial_json' }[
        d.type as string
      ];
      if (field && !isString(d[field])) return `a ${d.type} needs a string ${field}`;
      return undefined;
    }
    case 'content_block_stop':
      return isNumber(e.index) ? undefined : 'content_block_stop needs index';
    case 'message_delta': {
      const d = e.delta;
      const u = e.usage;
      if (!isObject(d) || !optional(d.stop_reason, 'string') || !optional(d.stop_sequence, 'string')) {
        return 'message_delta needs a delta with string stop_reason';
      }
      if (!isObject(u) || !isNumber(u.output_tokens)) return 'message_delta.usage.output_tokens must be a number';
      for (const key of ['input_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens']) {
        if (!optional(u[key], 'number')) return `message_delta.usage.${key} must be a number`;
      }
      const details = u.output_tokens_details;
      if (details != null && (!isObject(details) || !optional(details.thinking_tokens, 'number'))) {
        return 'message_delta.usage.output_tokens_details.thinking_tokens must be a number';
      }
      return undefined;
    }
    case 'error': {
      const err = e.error;
      return isObject(err) && isString(err.type) && isString(err.message) ? undefined : 'an error event needs error.type and error.message';
    }
    default:
      return undefined;
  }
}
