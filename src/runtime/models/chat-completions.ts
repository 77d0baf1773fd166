import type http from 'node:http';
import {
  convertOpenAICompatibleChatUsage,
  convertToOpenAICompatibleChatMessages,
  getResponseMetadata,
  mapOpenAICompatibleFinishReason,
  prepareTools,
} from '@ai-sdk/openai-compatible/internal';
import {
  InvalidResponseDataError,
  JSONParseError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3FinishReason,
  type LanguageModelV3StreamPart,
  type LanguageModelV3StreamResult,
  type SharedV3Warning,
  TypeValidationError,
} from '@ai-sdk/provider';
import { generateId, StreamingToolCallTracker } from '@ai-sdk/provider-utils';
import { type Controller, eventStream, failedResponse, headersOf, isObject, keepAliveAgent, optional, post } from './http-stream.js';

/**
 * A model of an OpenAI chat-completions server (Ollama, vLLM, LM Studio, llama.cpp...) whose streamed
 * call goes over node:http and parses the events as they come, instead of the AI SDK's
 * `@ai-sdk/openai-compatible` doStream: that one pipes each answer through fetch and four web-stream
 * transforms and validates every chunk with zod, which cost ~1.2 ms of CPU per call against ~0.3 ms
 * here (docs/benchmarks.md, "The provider path"). The request is built and the answer mapped with the
 * AI SDK's own pieces (messages, tools, usage, finish reasons, the tool-call tracker), so both speak
 * alike; `doGenerate` is the AI SDK model's. What this gives up: zod's check of each chunk (the fields
 * read are checked by hand below) and `providerOptions` (Agentry's runtime sets none; given, a warning says so).
 */

/** One chat-completions server, as configured: its models share its connections. */
export interface ChatCompletionsEndpoint {
  /** The provider's name in model ids, e.g. `openai-compatible` (the model's `provider` is `<name>.chat`). */
  name: string;
  baseUrl: string;
  apiKey?: string;
}

export class ChatCompletionsServer {
  private readonly url: URL;
  private readonly agent: http.Agent;
  private readonly headers: Record<string, string>;

  constructor(private readonly endpoint: ChatCompletionsEndpoint) {
    this.url = new URL(`${endpoint.baseUrl.replace(/\/+$/, '')}/chat/completions`);
    this.agent = keepAliveAgent(this.url);
    this.headers = {
      'content-type': 'application/json',
      'user-agent': 'agentry',
      ...(endpoint.apiKey ? { authorization: `Bearer ${endpoint.apiKey}` } : {}),
    };
  }

  /** The model `modelId` of this server; `generating` answers its non-streamed calls (the AI SDK's model of the same id). */
  model(modelId: string, generating: LanguageModelV3): LanguageModelV3 {
    return new ChatCompletionsModel({ server: this, modelId, generating, provider: `${this.endpoint.name}.chat` });
  }

  /** Posts `body`; resolves with the response once its headers arrived (any status). */
  post(body: string, options: LanguageModelV3CallOptions): Promise<http.IncomingMessage> {
    const headers: Record<string, string> = { ...this.headers };
    for (const [name, value] of Object.entries(options.headers ?? {})) if (value !== undefined) headers[name.toLowerCase()] = value;
    return post(this.url, this.agent, body, headers, options.abortSignal);
  }

  get href() {
    return this.url.href;
  }
}

class ChatCompletionsModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3';
  readonly supportedUrls = {};
  readonly provider: string;
  readonly modelId: string;
  private readonly server: ChatCompletionsServer;
  private readonly generating: LanguageModelV3;

  constructor(options: { server: ChatCompletionsServer; modelId: string; generating: LanguageModelV3; provider: string }) {
    this.server = options.server;
    this.modelId = options.modelId;
    this.generating = options.generating;
    this.provider = options.provider;
  }

  doGenerate(options: LanguageModelV3CallOptions) {
    return this.generating.doGenerate(options);
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const { body, warnings } = requestBody(this.modelId, options);
    const text = JSON.stringify(body);
    const response = await this.server.post(text, options);
    const headers = headersOf(response);
    const status = response.statusCode ?? 0;
    if (status < 200 || status > 299) throw await failedResponse(response, { url: this.server.href, body: text, headers });
    return { stream: answerStream(response, warnings), request: { body: text }, response: { headers } };
  }
}

/** The request, for the call options the runtime uses (the AI SDK's openai-compatible builds the same). */
function requestBody(modelId: string, options: LanguageModelV3CallOptions) {
  const warnings: SharedV3Warning[] = [];
  if (options.topK != null) warnings.push({ type: 'unsupported', feature: 'topK' });
  if (options.providerOptions && Object.keys(options.providerOptions).length > 0) {
    warnings.push({ type: 'unsupported', feature: 'providerOptions' });
  }
  const { tools, toolChoice, toolWarnings } = prepareTools({ tools: options.tools, toolChoice: options.toolChoice });
  const format = options.responseFormat;
  const body = {
    model: modelId,
    max_tokens: options.maxOutputTokens,
    temperature: options.temperature,
    top_p: options.topP,
    frequency_penalty: options.frequencyPenalty,
    presence_penalty: options.presencePenalty,
    response_format:
      format?.type === 'json'
        ? format.schema
          ? {
              type: 'json_schema',
              json_schema: { schema: format.schema, strict: true, name: format.name ?? 'response', description: format.description },
            }
          : { type: 'json_object' }
        : undefined,
    stop: options.stopSequences,
    seed: options.seed,
    messages: convertToOpenAICompatibleChatMessages(options.prompt),
    tools,
    tool_choice: toolChoice,
    stream: true,
    stream_options: { include_usage: true },
  };
  return { body, warnings: [...warnings, ...toolWarnings] };
}

/** The answer's events as stream parts, as they arrive; cancelling the stream closes the connection. */
function answerStream(response: http.IncomingMessage, warnings: SharedV3Warning[]): ReadableStream<LanguageModelV3StreamPart> {
  return eventStream(response, (controller) => {
    controller.enqueue({ type: 'stream-start', warnings });
    const answer = new AnswerParts(controller);
    return { event: (data) => answer.event(data), flush: () => answer.flush() };
  });
}

interface ToolCallDelta {
  index?: number | null;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null };
  extra_content?: { google?: { thought_signature?: string | null } | null } | null;
}
interface Choice {
  delta?: {
    content?: unknown;
    reasoning_content?: string | null;
    reasoning?: string | null;
    tool_calls?: ToolCallDelta[] | null;
  } | null;
  finish_reason?: string | null;
}
interface Chunk {
  id?: string | null;
  created?: number | null;
  model?: string | null;
  choices: Choice[];
  usage?: Usage | null;
}
type Usage = NonNullable<Parameters<typeof convertOpenAICompatibleChatUsage>[0]> & {
  completion_tokens_details?: { accepted_prediction_tokens?: number | null; rejected_prediction_tokens?: number | null } | null;
};

const METADATA_KEY = 'openai-compatible';

/** Turns the answer's chunks into stream parts, as `@ai-sdk/openai-compatible`'s doStream does. */
class AnswerParts {
  private readonly tracker: StreamingToolCallTracker<ToolCallDelta>;
  private finishReason: LanguageModelV3FinishReason | undefined;
  private usage: Chunk['usage'];
  private first = true;
  private reasoningOpen = false;
  private textOpen = false;
  // Arguments that came before their call's name, by index: a call is known once it is named.
  private readonly pending = new Map<number, { id: string | null; args: string; extra: ToolCallDelta['extra_content'] }>();
  private readonly forwarded = new Set<number>();

  constructor(private readonly controller: Controller) {
    this.tracker = new StreamingToolCallTracker<ToolCallDelta>(controller, {
      generateId,
      extractMetadata: (delta) => {
        const signature = delta.extra_content?.google?.thought_signature;
        return signature ? { [METADATA_KEY]: { thoughtSignature: signature } } : undefined;
      },
      buildToolCallProviderMetadata: (metadata) => metadata,
    });
  }

  event(data: string) {
    if (data === '[DONE]') return;
    let value: unknown;
    try {
      value = JSON.parse(data);
    } catch (cause) {
      return this.error(new JSONParseError({ text: data, cause }));
    }
    const problem = chunkProblem(value);
    if (problem) return this.error(new TypeValidationError({ value, cause: new Error(problem) }));
    if ('error' in (value as object)) return this.error((value as { error: unknown }).error);
    this.chunk(value as Chunk);
  }

  private error(error: unknown) {
    this.finishReason = { unified: 'error', raw: undefined };
    this.controller.enqueue({ type: 'error', error });
  }

  private chunk(value: Chunk) {
    if (this.first) {
      this.first = false;
      this.controller.enqueue({ type: 'response-metadata', ...getResponseMetadata(value) });
    }
    if (value.usage != null) this.usage = value.usage;
    const choice = value.choices[0];
    if (choice?.finish_reason != null) {
      this.finishReason = { unified: mapOpenAICompatibleFinishReason(choice.finish_reason), raw: choice.finish_reason };
    }
    const delta = choice?.delta;
    if (delta == null) return;
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (reasoning) this.reasoningDelta(reasoning);
    for (const part of contentParts(delta.content)) {
      if (part.type === 'reasoning') this.reasoningDelta(part.text);
      else this.textDelta(part.text);
    }
    if (delta.tool_calls != null && delta.tool_calls.length > 0) {
      this.endReasoning();
      for (const call of delta.tool_calls) this.toolCallDelta(call);
    }
  }

  private reasoningDelta(delta: string) {
    if (this.textOpen) {
      this.controller.enqueue({ type: 'text-end', id: 'txt-0' });
      this.textOpen = false;
    }
    if (!this.reasoningOpen) {
      this.controller.enqueue({ type: 'reasoning-start', id: 'reasoning-0' });
      this.reasoningOpen = true;
    }
    this.controller.enqueue({ type: 'reasoning-delta', id: 'reasoning-0', delta });
  }

  private textDelta(delta: string) {
    this.endReasoning();
    if (!this.textOpen) {
      this.controller.enqueue({ type: 'text-start', id: 'txt-0' });
      this.textOpen = true;
    }
    this.controller.enqueue({ type: 'text-delta', id: 'txt-0', delta });
  }

  private endReasoning() {
    if (!this.reasoningOpen) return;
    this.controller.enqueue({ type: 'reasoning-end', id: 'reasoning-0' });
    this.reasoningOpen = false;
  }

  private toolCallDelta(delta: ToolCallDelta) {
    const index = delta.index;
    if (index == null || this.forwarded.has(index)) {
      this.tracker.processDelta(delta);
      return;
    }
    let pending = this.pending.get(index);
    if (!pending) {
      pending = { id: delta.id ?? null, args: '', extra: delta.extra_content ?? null };
      this.pending.set(index, pending);
    } else {
      pending.id ??= delta.id ?? null;
      pending.extra ??= delta.extra_content ?? null;
    }
    if (delta.function?.arguments != null) pending.args += delta.function.arguments;
    const name = delta.function?.name;
    if (name != null) {
      this.tracker.processDelta({
        index,
        id: pending.id,
        function: { name, arguments: pending.args },
        extra_content: pending.extra ?? undefined,
      });
      this.pending.delete(index);
      this.forwarded.add(index);
    }
  }

  flush() {
    this.endReasoning();
    if (this.textOpen) this.controller.enqueue({ type: 'text-end', id: 'txt-0' });
    for (const [index, pending] of this.pending) {
      this.tracker.processDelta({ index, id: pending.id, function: { arguments: pending.args } });
    }
    this.pending.clear();
    this.tracker.flush();
    if (this.finishReason == null) {
      this.error(new InvalidResponseDataError({ data: undefined, message: 'Response stream ended without a finish reason.' }));
    }
    const details = this.usage?.completion_tokens_details;
    const metadata: Record<string, number> = {};
    if (details?.accepted_prediction_tokens != null) metadata.acceptedPredictionTokens = details.accepted_prediction_tokens;
    if (details?.rejected_prediction_tokens != null) metadata.rejectedPredictionTokens = details.rejected_prediction_tokens;
    this.controller.enqueue({
      type: 'finish',
      finishReason: this.finishReason!,
      usage: convertOpenAICompatibleChatUsage(this.usage),
      providerMetadata: { [METADATA_KEY]: metadata },
    });
  }
}

/** A delta's content: a string, or (some servers) parts of text and thinking. */
function contentParts(content: unknown): { type: 'text' | 'reasoning'; text: string }[] {
  if (content == null) return [];
  if (typeof content === 'string') return content.length > 0 ? [{ type: 'text', text: content }] : [];
  const parts: { type: 'text' | 'reasoning'; text: string }[] = [];
  for (const part of content as { type?: unknown; text?: unknown; thinking?: unknown }[]) {
    if (part?.type === 'text' && typeof part.text === 'string') {
      if (part.text.length > 0) parts.push({ type: 'text', text: part.text });
    } else if (part?.type === 'thinking' && Array.isArray(part.thinking)) {
      const text = part.thinking
        .filter((t: { type?: unknown; text?: unknown }) => t?.type === 'text' && typeof t.text === 'string')
        .map((t: { text: string }) => t.text)
        .join('');
      if (text.length > 0) parts.push({ type: 'reasoning', text });
    }
  }
  return parts;
}

/**
 * What is wrong with a chunk, for the fields that are read (the AI SDK's chunk schema, checked by
 * hand); undefined when it is usable. An error chunk needs its message.
 */
function chunkProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'a chunk must be an object';
  if ('error' in value && !Array.isArray(value.choices)) {
    return isObject(value.error) && typeof value.error.message === 'string' ? undefined : 'error.message must be a string';
  }
  if (!optional(value.id, 'string') || !optional(value.created, 'number') || !optional(value.model, 'string')) {
    return 'id, created and model must be a string, a number and a string';
  }
  if (!Array.isArray(value.choices)) return 'choices must be an array';
  for (const choice of value.choices) {
    if (!isObject(choice) || !optional(choice.finish_reason, 'string')) return 'each choice must be an object with a string finish_reason';
    const delta = choice.delta;
    if (delta == null) continue;
    if (!isObject(delta)) return 'choices[].delta must be an object';
    if (delta.content != null && typeof delta.content !== 'string' && !Array.isArray(delta.content))
      return 'delta.content must be a string or an array';
    if (!optional(delta.reasoning_content, 'string') || !optional(delta.reasoning, 'string'))
      return 'delta.reasoning_content must be a string';
    if (delta.tool_calls == null) continue;
    if (!Array.isArray(delta.tool_calls)) return 'delta.tool_calls must be an array';
    for (const call of delta.tool_calls) {
      if (!isObject(call) || !optional(call.index, 'number') || !optional(call.id, 'string') || !isObject(call.function)) {
        return 'each tool call needs an object function, a number index and a string id';
      }
      if (!optional(call.function.name, 'string') || !optional(call.function.arguments, 'string')) {
        return 'a tool call’s function name and arguments must be strings';
      }
    }
  }
  if (value.usage != null && !isObject(value.usage)) return 'usage must be an object';
  if (isObject(value.usage)) {
    for (const key of ['prompt_tokens', 'completion_tokens', 'total_tokens']) {
      if (!optional(value.usage[key], 'number')) return `usage.${key} must be a number`;
    }
  }
  return undefined;
}
