import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for a model vendor's HTTP API: it records every request and answers each with the
 * next scripted response, so a test drives the REAL provider packages (@ai-sdk/openai, anthropic,
 * openai-compatible) and then asserts on exactly what they sent. The stream builders below write each
 * vendor's wire format by hand (event names and fields as the provider packages parse them).
 */

export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  /** A JSON body (error answers). */
  json?: unknown;
  /** A body sent as is (an HTML page where an API was expected), with `headers`' content type or text/html. */
  text?: string;
  /** Server-sent event frames, written one by one. */
  sse?: string[];
  /** Answered once this settles: holds the model call (and so its run) where a test needs it. */
  hold?: Promise<unknown>;
}

interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export interface FakeProvider {
  /** Base URL with the `/v1` prefix every vendor SDK expects in its base URL. */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Queues responses for the next requests, in order; resets the recorded requests. */
  script(...responses: ScriptedResponse[]): void;
  /** Responses scripted but never requested. */
  unused(): number;
  close(): Promise<void>;
}

export async function startFakeProvider(): Promise<FakeProvider> {
  const queue: ScriptedResponse[] = [];
  const requests: RecordedRequest[] = [];
  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const c of req) raw += c;
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: raw ? JSON.parse(raw) : undefined });
    const next = queue.shift();
    if (!next) {
      res.writeHead(418, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `fake provider: no scripted response for ${req.url}` } }));
      return;
    }
    await next.hold;
    if (next.sse) {
      res.writeHead(next.status ?? 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...next.headers });
      for (const frame of next.sse) res.write(frame);
      res.end();
      return;
    }
    if (next.text !== undefined) {
      res.writeHead(next.status ?? 200, { 'content-type': 'text/html; charset=utf-8', ...next.headers });
      res.end(next.text);
      return;
    }
    res.writeHead(next.status ?? 200, { 'content-type': 'application/json', ...next.headers });
    res.end(JSON.stringify(next.json ?? {}));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    script(...responses) {
      requests.length = 0;
      queue.length = 0;
      queue.push(...responses);
    },
    unused: () => queue.length,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const frame = (event: string | undefined, data: unknown) =>
  `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

// ------------------------------------------------------------------ OpenAI Responses API (POST /v1/responses)

export type ResponsesItem =
  /** A reasoning item as o-series / gpt-5 models stream it: opaque id, encrypted content, optional summary. */
  | { type: 'reasoning'; id: string; encrypted_content: string; summary?: string[] }
  | { type: 'function_call'; id: string; call_id: string; name: string; arguments: string[] }
  | { type: 'message'; id: string; text: string[] }
  /** Any event as is (an `error` event in the middle of a stream, say). */
  | { type: 'raw'; event: Record<string, unknown> };

export interface ResponsesUsage {
  input_tokens: number;
  output_tokens: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
}

/**
 * One streamed Responses API answer: response.created, each output item (added, its deltas, done),
 * then response.completed, or response.incomplete when `incomplete` names a reason
 * (max_output_tokens). `end: false` stops after the items (a stream cut short).
 */
export function responsesStream(opts: {
  id: string;
  model?: string;
  items: ResponsesItem[];
  usage?: ResponsesUsage;
  incomplete?: string;
  end?: boolean;
}): string[] {
  const model = opts.model ?? 'gpt-5-mini-2025-08-07';
  let seq = 0;
  const out: string[] = [];
  const emit = (e: Record<string, unknown>) => out.push(frame(String(e.type), { ...e, sequence_number: seq++ }));
  const response = (status: string, extra: Record<string, unknown> = {}) => ({
    id: opts.id,
    object: 'response',
    created_at: 1_760_000_000,
    status,
    model,
    output: [],
    ...extra,
  });
  emit({ type: 'response.created', response: response('in_progress') });
  emit({ type: 'response.in_progress', response: response('in_progress') });
  opts.items.forEach((item, output_index) => {
    switch (item.type) {
      case 'raw':
        emit(item.event);
        return;
      case 'reasoning': {
        const summary = item.summary ?? [];
        emit({
          type: 'response.output_item.added',
          output_index,
          item: { type: 'reasoning', id: item.id, summary: [], encrypted_content: item.encrypted_content },
        });
        summary.forEach((text, summary_index) => {
          const part = { type: 'summary_text', text: '' };
          emit({ type: 'response.reasoning_summary_part.added', item_id: item.id, output_index, summary_index, part });
          emit({ type: 'response.reasoning_summary_text.delta', item_id: item.id, output_index, summary_index, delta: text });
          emit({ type: 'response.reasoning_summary_text.done', item_id: item.id, output_index, summary_index, text });
          emit({ type: 'response.reasoning_summary_part.done', item_id: item.id, output_index, summary_index, part: { ...part, text } });
        });
        const done = {
          type: 'reasoning',
          id: item.id,
          summary: summary.map((text) => ({ type: 'summary_text', text })),
          encrypted_content: item.encrypted_content,
        };
        emit({ type: 'response.output_item.done', output_index, item: done });
        return;
      }
      case 'function_call': {
        const base = { type: 'function_call', id: item.id, call_id: item.call_id, name: item.name };
        emit({ type: 'response.output_item.added', output_index, item: { ...base, arguments: '', status: 'in_progress' } });
        for (const delta of item.arguments) emit({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index, delta });
        const args = item.arguments.join('');
        emit({ type: 'response.function_call_arguments.done', item_id: item.id, output_index, arguments: args });
        emit({ type: 'response.output_item.done', output_index, item: { ...base, arguments: args, status: 'completed' } });
        return;
      }
      case 'message': {
        emit({
          type: 'response.output_item.added',
          output_index,
          item: { type: 'message', id: item.id, status: 'in_progress', role: 'assistant', content: [] },
        });
        emit({
          type: 'response.content_part.added',
          item_id: item.id,
          output_index,
          content_index: 0,
          part: { type: 'output_text', text: '', annotations: [] },
        });
        for (const delta of item.text)
          emit({ type: 'response.output_text.delta', item_id: item.id, output_index, content_index: 0, delta, logprobs: [] });
        const text = item.text.join('');
        emit({ type: 'response.output_text.done', item_id: item.id, output_index, content_index: 0, text, logprobs: [] });
        const part = { type: 'output_text', text, annotations: [] };
        emit({ type: 'response.content_part.done', item_id: item.id, output_index, content_index: 0, part });
        emit({
          type: 'response.output_item.done',
          output_index,
          item: { type: 'message', id: item.id, status: 'completed', role: 'assistant', content: [part] },
        });
        return;
      }
    }
  });
  if (opts.end === false) return out;
  const u = opts.usage ?? { input_tokens: 0, output_tokens: 0 };
  const usage = {
    input_tokens: u.input_tokens,
    input_tokens_details: { cached_tokens: u.cached_tokens ?? 0 },
    output_tokens: u.output_tokens,
    output_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0 },
    total_tokens: u.input_tokens + u.output_tokens,
  };
  if (opts.incomplete) {
    emit({ type: 'response.incomplete', response: response('incomplete', { incomplete_details: { reason: opts.incomplete }, usage }) });
  } else {
    emit({ type: 'response.completed', response: response('completed', { incomplete_details: null, usage }) });
  }
  return out;
}

/** An OpenAI API error answer ({ error: { message, type, param, code } }). */
export function openaiError(
  status: number,
  message: string,
  type = 'invalid_request_error',
  code: string | null = null,
  headers?: Record<string, string>,
): ScriptedResponse {
  return { status, headers, json: { error: { message, type, param: null, code } } };
}

// ------------------------------------------------------------------ Anthropic Messages API (POST /v1/messages)

export type AnthropicBlock =
  | { type: 'thinking'; thinking: string[]; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: string[] }
  | { type: 'text'; text: string[] }
  /** Any event as is (an `error` event in the middle of a stream, say). */
  | { type: 'raw'; event: Record<string, unknown> };

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/**
 * One streamed Messages API answer: message_start, ping, each content block (start, deltas, stop),
 * message_delta with the stop reason and output tokens, message_stop. `end: false` stops after the blocks.
 */
export function anthropicStream(opts: {
  id: string;
  model?: string;
  blocks: AnthropicBlock[];
  stop_reason?: string;
  usage: AnthropicUsage;
  end?: boolean;
}): string[] {
  const out: string[] = [];
  const emit = (e: Record<string, unknown>) => out.push(frame(String(e.type), e));
  const { output_tokens, ...inputUsage } = opts.usage;
  emit({
    type: 'message_start',
    message: {
      id: opts.id,
      type: 'message',
      role: 'assistant',
      model: opts.model ?? 'claude-sonnet-4-5-20250929',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { cache_creation_input_tokens: 0, cache_read_input_tokens: 0, ...inputUsage, output_tokens: 1 },
    },
  });
  emit({ type: 'ping' });
  let index = 0;
  for (const block of opts.blocks) {
    if (block.type === 'raw') {
      emit(block.event);
      continue;
    }
    switch (block.type) {
      case 'thinking':
        emit({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
        for (const thinking of block.thinking) emit({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking } });
        emit({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } });
        break;
      case 'redacted_thinking':
        emit({ type: 'content_block_start', index, content_block: { type: 'redacted_thinking', data: block.data } });
        break;
      case 'tool_use':
        emit({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
        for (const partial_json of block.input)
          emit({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
        break;
      case 'text':
        emit({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        for (const text of block.text) emit({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
        break;
    }
    emit({ type: 'content_block_stop', index });
    index++;
  }
  if (opts.end === false) return out;
  emit({ type: 'message_delta', delta: { stop_reason: opts.stop_reason ?? 'end_turn', stop_sequence: null }, usage: { output_tokens } });
  emit({ type: 'message_stop' });
  return out;
}

/** An Anthropic API error answer ({ type: 'error', error: { type, message } }). */
export function anthropicError(status: number, type: string, message: string, headers?: Record<string, string>): ScriptedResponse {
  return { status, headers, json: { type: 'error', error: { type, message }, request_id: 'req_011CTest' } };
}

// ------------------------------------------------------------------ Chat Completions (POST /v1/chat/completions)

export interface ChatToolCall {
  id: string;
  name: string;
  /** The arguments string as the model streams it, in pieces. */
  arguments: string[];
}

/**
 * One streamed chat-completions answer (OpenAI-compatible servers: vLLM, Ollama, llama.cpp): a role
 * chunk, text deltas, tool calls one after another (first chunk with id and name, then argument
 * pieces, by index), a finish chunk, a usage chunk (stream_options.include_usage), then [DONE].
 */
export function chatStream(opts: {
  text?: string[];
  toolCalls?: ChatToolCall[];
  finish: string;
  usage: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
  model?: string;
}): string[] {
  const model = opts.model ?? 'qwen3-8b';
  const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) =>
    frame(undefined, {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1_760_000_000,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason }],
    });
  const out = [chunk({ role: 'assistant', content: '' })];
  for (const content of opts.text ?? []) out.push(chunk({ content }));
  (opts.toolCalls ?? []).forEach((call, index) => {
    out.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const args of call.arguments) out.push(chunk({ tool_calls: [{ index, function: { arguments: args } }] }));
  });
  out.push(chunk({}, opts.finish));
  const { prompt_tokens, completion_tokens, cached_tokens } = opts.usage;
  out.push(
    frame(undefined, {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1_760_000_000,
      model,
      choices: [],
      usage: {
        prompt_tokens,
        completion_tokens,
        total_tokens: prompt_tokens + completion_tokens,
        ...(cached_tokens != null ? { prompt_tokens_details: { cached_tokens } } : {}),
      },
    }),
  );
  out.push(frame(undefined, '[DONE]'));
  return out;
}
