import type { Middleware, MiddlewareCallbackParams } from 'openapi-fetch';
import { AgentryError, abortedError, errorFromResponse, networkError, retryAfterSeconds } from './errors.js';
import { anonymousOperations, startOperations } from './operations.js';

/** What the middleware needs of the client: its credential and how it waits and retries. */
export interface MiddlewareConfig {
  /** The bearer credential for the next request (an API key or an access token). */
  credential(): Promise<string>;
  /** Forgets a cached access token the server refused; false when there is none to refresh. */
  invalidateToken(): boolean;
  wait(ms: number, signal?: AbortSignal): Promise<void>;
  maxRetries: number;
  maxRetryDelayMs: number;
}

const IDEMPOTENCY_KEY = 'idempotency-key';
const BASE_BACKOFF_MS = 500;
/** Methods a second attempt cannot turn into a second effect (RFC 9110, 9.2.2). */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** Requests sent with no credential at all although their path is not a public one (Http.send's `anonymous`). */
export const anonymousRequests = new WeakSet<object>();

const operationOf = (request: Request, schemaPath: string) => `${request.method} ${schemaPath}`;

/** Sets `Authorization: Bearer` unless the operation is public or the caller set its own. */
export function authMiddleware(config: MiddlewareConfig): Middleware {
  return {
    async onRequest({ request, schemaPath, params }) {
      if (request.headers.has('authorization') || anonymousRequests.has(params)) return;
      if (anonymousOperations.has(operationOf(request, schemaPath))) return;
      request.headers.set('authorization', `Bearer ${await config.credential()}`);
    },
  };
}

/**
 * Gives a request that starts work (startOperations) a new Idempotency-Key unless it has one: the
 * retries below resend the same request, so they carry the same key and the server answers the run
 * the first attempt started.
 */
export function idempotencyMiddleware(): Middleware {
  return {
    onRequest({ request, schemaPath }) {
      if (!startOperations.has(operationOf(request, schemaPath)) || request.headers.has(IDEMPOTENCY_KEY)) return;
      request.headers.set(IDEMPOTENCY_KEY, globalThis.crypto.randomUUID());
    },
  };
}

/**
 * Turns every failure into an AgentryError: a non-2xx answer into the problem it carries, an abort
 * into code `aborted`, no answer at all into `network_error` naming the URL.
 */
export function errorMiddleware(): Middleware {
  return {
    async onResponse({ response }) {
      if (!response.ok) throw await errorFromResponse(response);
    },
    onError({ request, error }) {
      return toAgentryError(request, error);
    },
  };
}

function toAgentryError(request: Request, error: unknown): AgentryError {
  if (error instanceof AgentryError) return error;
  if (request.signal.aborted) return abortedError(request.signal.reason ?? error);
  return networkError(request, error);
}

/**
 * Retries: a 429 for any request (the server refused it before doing anything); a 503 or a network
 * failure only for an idempotent method or a request carrying an Idempotency-Key, so no retry starts
 * work twice. The wait is the answer's Retry-After (or RateLimit-Reset), else an exponential backoff;
 * a wait longer than maxRetryDelayMs fails at once. A 401 with a cached access token fetches another
 * token once. Registered last, it keeps a copy of the request as sent, to send it again.
 */
export function retryMiddleware(config: MiddlewareConfig): Middleware {
  const copies = new Map<string, { request: Request; attempt: number; refreshed: boolean }>();

  const retryable = (request: Request) => IDEMPOTENT_METHODS.has(request.method) || request.headers.has(IDEMPOTENCY_KEY);
  const backoff = (attempt: number) => BASE_BACKOFF_MS * 2 ** attempt * (1 + Math.random() / 2);

  /** Sends the copy again after `delayMs`; a network failure on the way is retried here as well. */
  async function resend(params: MiddlewareCallbackParams, delayMs: number): Promise<Response> {
    const state = copies.get(params.id)!;
    for (;;) {
      state.attempt++;
      try {
        await config.wait(delayMs, state.request.signal);
        return await params.options.fetch(state.request.clone());
      } catch (err) {
        if (state.request.signal.aborted || !retryable(state.request) || state.attempt >= config.maxRetries) {
          copies.delete(params.id);
          throw toAgentryError(state.request, err);
        }
        delayMs = backoff(state.attempt);
      }
    }
  }

  return {
    onRequest({ request, id }) {
      copies.set(id, { request: request.clone(), attempt: 0, refreshed: false });
    },
    async onResponse(params) {
      const state = copies.get(params.id);
      if (!state) return;
      let response = params.response;
      for (;;) {
        if (response.status === 401 && !state.refreshed && !anonymousRequests.has(params.params) && config.invalidateToken()) {
          // A cached access token revoked or expired early: fetch another once.
          state.refreshed = true;
          state.request.headers.set('authorization', `Bearer ${await config.credential()}`);
          await response.body?.cancel();
          response = await resend(params, 0);
          state.attempt--;
          continue;
        }
        const again = response.status === 429 || (response.status === 503 && retryable(state.request));
        if (!again || state.attempt >= config.maxRetries) break;
        const retryAfter = retryAfterSeconds(response.headers);
        const delayMs = retryAfter !== undefined ? retryAfter * 1000 : backoff(state.attempt);
        if (delayMs > config.maxRetryDelayMs) break;
        await response.body?.cancel();
        response = await resend(params, delayMs);
      }
      copies.delete(params.id);
      return response === params.response ? undefined : response;
    },
    async onError(params) {
      const state = copies.get(params.id);
      if (!state || params.request.signal.aborted || !retryable(state.request) || config.maxRetries === 0) {
        copies.delete(params.id);
        return;
      }
      // Answered: onResponse sees this response next, and may retry it further.
      return resend(params, backoff(0));
    },
  };
}
