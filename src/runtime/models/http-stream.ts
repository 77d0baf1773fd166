import http from 'node:http';
import https from 'node:https';
import { APICallError, InvalidResponseDataError, type LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { createParser } from 'eventsource-parser';

/**
 * What the lean streamed calls share (chat-completions.ts, responses.ts, anthropic-messages.ts): a POST
 * over node:http on kept-alive connections, a refused answer read into the AI SDK's APICallError, and an
 * answer's server-sent events handed to a reader as they arrive, inside the bounds below. Errors are
 * worded and typed as the AI SDK's fetch path words them, so retries and the breaker classify them alike.
 */

/** The most of an answer's body read: an error's body, or a whole streamed answer. */
const MAX_ERROR_BODY_BYTES = 1024 * 1024;
const MAX_STREAM_BYTES = 64 * 1024 * 1024;

export type Controller = ReadableStreamDefaultController<LanguageModelV3StreamPart>;

/** Keep-alive: a run's steps, and runs after it, reuse the connection rather than open one each. */
export function keepAliveAgent(url: URL): http.Agent {
  return url.protocol === 'https:' ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
}

/** Posts `body` to `url`; resolves with the response once its headers arrived (any status). */
export function post(
  url: URL,
  agent: http.Agent,
  body: string,
  headers: Record<string, string>,
  signal: AbortSignal | undefined,
): Promise<http.IncomingMessage> {
  // node:http does not decompress (fetch did, and asked for gzip): say so, else a server may compress the stream.
  const sent: Record<string, string> = { 'accept-encoding': 'identity', ...headers, 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? https.request : http.request;
    const request = send(url, { method: 'POST', agent, headers: sent, signal }, resolve);
    // Every error of the request is heard (a later one, once the response is being read, reaches it too).
    request.on('error', (err) => reject(connectionError(err, url, body)));
    request.end(body);
  });
}

/** A failure to reach the server, worded as the AI SDK's fetch path words it; an abort stays an abort. */
function connectionError(err: Error, url: URL, body: string): Error {
  if (err.name === 'AbortError') return err;
  return new APICallError({
    message: `Cannot connect to API: ${err.message}`,
    cause: err,
    url: url.href,
    requestBodyValues: body,
    isRetryable: true,
  });
}

export function headersOf(response: http.IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** A stream result's `response`, whose headers are read from the answer when first asked for. */
export function lazyHeaders(response: http.IncomingMessage): { readonly headers: Record<string, string> } {
  let headers: Record<string, string> | undefined;
  return {
    get headers() {
      headers ??= headersOf(response);
      return headers;
    },
  };
}

/**
 * Reads the body of a refused call (up to a bound) into the AI SDK's APICallError, the provider's
 * message when it gave one (OpenAI and Anthropic both answer `{ error: { message } }`).
 */
export async function failedResponse(
  response: http.IncomingMessage,
  call: { url: string; body: string; headers: Record<string, string> },
): Promise<APICallError> {
  let responseBody = '';
  try {
    response.setEncoding('utf8');
    for await (const chunk of response) {
      responseBody += chunk;
      if (responseBody.length > MAX_ERROR_BODY_BYTES) {
        response.destroy();
        break;
      }
    }
  } catch {
    // What arrived is what the error carries.
  }
  let message = response.statusMessage ?? '';
  let data: unknown;
  if (responseBody.trim() !== '') {
    try {
      const parsed = JSON.parse(responseBody) as { error?: { message?: unknown } };
      if (typeof parsed?.error?.message === 'string') {
        message = parsed.error.message;
        data = parsed;
      }
    } catch {
      // Not JSON: the status line's words.
    }
  }
  return new APICallError({
    message,
    url: call.url,
    requestBodyValues: call.body,
    statusCode: response.statusCode,
    responseHeaders: call.headers,
    responseBody,
    data,
  });
}

/** Turns one answer's events into stream parts. Throwing from `event` or `flush` ends the stream with that error. */
export interface EventReader {
  /** One event: its data, and its name (`event:` line) when it had one. */
  event(data: string, name: string | undefined): void;
  /** The body ended: close what is open and tell the finish. */
  flush(): void;
  /** Called once however the stream ended (flushed, failed or cancelled). */
  ended?(): void;
}

/** The answer's events as stream parts, as they arrive; cancelling the stream closes the connection. */
export function eventStream(
  response: http.IncomingMessage,
  reader: (controller: Controller) => EventReader,
): ReadableStream<LanguageModelV3StreamPart> {
  let controller!: Controller;
  // Once the stream closed, errored or was cancelled, nothing more is told (the controller would throw).
  let settled = false;
  let answer: EventReader | undefined;
  const stream = new ReadableStream<LanguageModelV3StreamPart>({
    start(c) {
      controller = c;
    },
    cancel() {
      settled = true;
      response.destroy();
      answer?.ended?.();
    },
  });
  answer = reader(controller);
  const events = answer;
  const fail = (err: unknown) => {
    if (settled) return;
    settled = true;
    controller.error(err);
    response.destroy();
    events.ended?.();
  };
  const parser = createParser({ onEvent: (event) => events.event(event.data, event.event) });
  let bytes = 0;
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    if (settled) return;
    bytes += chunk.length;
    if (bytes > MAX_STREAM_BYTES) {
      fail(new InvalidResponseDataError({ data: undefined, message: `the streamed answer is larger than ${MAX_STREAM_BYTES} bytes` }));
      return;
    }
    // A chunk the reader cannot place throws: the stream ends with that error, as the AI SDK's would.
    try {
      parser.feed(chunk);
    } catch (err) {
      fail(err);
    }
  });
  response.on('end', () => {
    if (settled) return;
    try {
      events.flush();
    } catch (err) {
      return fail(err);
    }
    settled = true;
    controller.close();
    events.ended?.();
  });
  response.on('error', fail);
  // A connection that closes before the body ended (without an error of its own) cut the answer.
  response.on('close', () => {
    if (!response.complete) fail(Object.assign(new Error('the connection closed before the answer ended'), { code: 'ECONNRESET' }));
  });
  return stream;
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const optional = (v: unknown, type: 'string' | 'number' | 'boolean') => v == null || typeof v === type;
