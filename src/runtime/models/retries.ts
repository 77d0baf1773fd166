import { APICallError, InvalidResponseDataError, JSONParseError, TypeValidationError } from '@ai-sdk/provider';

/** How a provider's failed calls are retried (per provider; configuration fills it, docs/models.md). */
export interface RetryPolicy {
  /** Attempts of one model step in all, the first included (1: never retried). */
  maxAttempts: number;
  /** The first backoff's ceiling; each later one doubles it (full jitter: a random wait below it). */
  baseMs: number;
  /** The longest wait between attempts, a provider's Retry-After included. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 3, baseMs: 500, maxDelayMs: 30_000 };

/** The stable codes of a run that failed on its provider. */
export type ProviderErrorCode = 'provider_rate_limited' | 'provider_unavailable' | 'provider_bad_request' | 'provider_timeout';

/** What a provider failure means for the caller: its code, whether another attempt may help, the provider's words. */
export interface ProviderFailure {
  code: ProviderErrorCode;
  retryable: boolean;
  /** The wait the provider asked for (Retry-After, retry-after-ms), when it did. */
  retryAfterMs?: number;
  /** What the run's error says: the provider's own words for an HTTP answer; generic words for a connection-level failure. */
  message: string;
  /**
   * A connection-level failure's own words (the socket's error, which may name an internal address and
   * port): for the server log only, never the tenant's (the caller logs it: the runtime has no logger).
   */
  detail?: string;
}

/** A model call that failed on its provider for good (not retryable, or out of attempts). */
export class ProviderError extends Error {
  /** A connection-level failure's own words, for the server log (ProviderFailure.detail). */
  readonly detail?: string;
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    options?: { cause?: unknown; detail?: string },
  ) {
    super(message, options);
    this.detail = options?.detail;
  }
}

const UNREACHABLE = 'the provider could not be reached, or its connection broke';
const UNREADABLE = 'the provider’s answer could not be read: malformed, or cut short';

/**
 * A stream that ended without saying anything (no response, no usage) or without its finish: the
 * provider's answer broke off or was not a stream at all (a JSON body where events were expected).
 */
export class IncompleteStreamError extends Error {
  override readonly name = 'IncompleteStreamError';
}
const TIMED_OUT = 'the provider did not answer in time';

const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function byStatus(status: number): Pick<ProviderFailure, 'code' | 'retryable'> {
  if (status === 408 || status === 504) return { code: 'provider_timeout', retryable: true };
  if (status === 429) return { code: 'provider_rate_limited', retryable: true };
  if (status === 409 || status >= 500) return { code: 'provider_unavailable', retryable: true };
  return { code: 'provider_bad_request', retryable: false };
}

/** Error codes along an error's cause chain (fetch wraps the socket's error in a TypeError). */
function causeCodes(err: unknown): string[] {
  const codes: string[] = [];
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    if ((e as { name?: unknown }).name === 'TimeoutError') codes.push('ETIMEDOUT');
  }
  return codes;
}

/** The messages along an error's cause chain, joined: a connection failure's words for the log. */
function chainMessages(err: unknown): string {
  const messages: string[] = [];
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) if (e.message) messages.push(e.message);
  return messages.join(': ');
}

function retryAfterMs(headers: Record<string, string> | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(headers['retry-after-ms'] ?? '');
  if (ms >= 0) return ms;
  const raw = headers['retry-after'];
  if (!raw) return undefined;
  const seconds = Number.parseFloat(raw);
  const wait = Number.isNaN(seconds) ? Date.parse(raw) - Date.now() : seconds * 1000;
  return Number.isNaN(wait) ? undefined : Math.max(0, wait);
}

/**
 * Classifies a model call's failure: an HTTP answer by its status (AI SDK's APICallError), a broken
 * connection or a timeout by the socket's code, a stream's error event by its type (Anthropic's
 * overloaded_error, rate_limit_error). Anything else (a model's own failure) is not the provider's: undefined.
 */
export function classifyProviderError(err: unknown): ProviderFailure | undefined {
  if (APICallError.isInstance(err)) {
    if (err.statusCode !== undefined && err.statusCode >= 400) {
      const failure: ProviderFailure = { ...byStatus(err.statusCode), message: err.message };
      if (/overloaded/i.test(err.message) && failure.code === 'provider_bad_request') failure.code = 'provider_unavailable';
      if (failure.code !== 'provider_bad_request') failure.retryable = true;
      const wait = retryAfterMs(err.responseHeaders);
      if (wait !== undefined) failure.retryAfterMs = wait;
      return failure;
    }
    // No answer, or a body that broke off (the AI SDK wraps the connection's failure, even after a 200).
    const timedOut = causeCodes(err.cause).some((c) => TIMEOUT_CODES.has(c));
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return {
      code: timedOut ? 'provider_timeout' : 'provider_unavailable',
      retryable: true,
      message: timedOut ? TIMED_OUT : UNREACHABLE,
      detail: `${err.message}${cause}`,
    };
  }
  // An answer the provider package could not parse (a malformed chunk, a body that is not a stream): another attempt may read.
  if (
    err instanceof IncompleteStreamError ||
    InvalidResponseDataError.isInstance(err) ||
    JSONParseError.isInstance(err) ||
    TypeValidationError.isInstance(err)
  ) {
    return { code: 'provider_unavailable', retryable: true, message: UNREADABLE, detail: chainMessages(err) };
  }
  const codes = causeCodes(err);
  const message = err instanceof Error ? err.message : '';
  const detail = chainMessages(err);
  if (codes.some((c) => TIMEOUT_CODES.has(c))) return { code: 'provider_timeout', retryable: true, message: TIMED_OUT, detail };
  if (codes.some((c) => CONNECTION_CODES.has(c)) || (err instanceof TypeError && /fetch failed|terminated/.test(message))) {
    return { code: 'provider_unavailable', retryable: true, message: UNREACHABLE, detail };
  }
  // A stream's error event, as a provider hands it over: { type, message } or { error: { type, message } }.
  if (err && typeof err === 'object' && !(err instanceof Error)) {
    const body = (err as { error?: unknown }).error ?? err;
    const { type, message: said } = body as { type?: unknown; message?: unknown };
    const text = typeof said === 'string' ? said : String(type);
    if (type === 'overloaded_error') return { code: 'provider_unavailable', retryable: true, message: text };
    if (type === 'rate_limit_error') return { code: 'provider_rate_limited', retryable: true, message: text };
  }
  return undefined;
}

/**
 * The one decision after a failed attempt: the wait before the next one, or undefined to give up.
 * The provider's Retry-After is honoured up to the cap; else exponential backoff with full jitter.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attemptsMade: number,
  failure: ProviderFailure,
  random: () => number = Math.random,
): number | undefined {
  if (!failure.retryable || attemptsMade >= policy.maxAttempts) return undefined;
  if (failure.retryAfterMs !== undefined) return Math.min(failure.retryAfterMs, policy.maxDelayMs);
  return Math.floor(random() * Math.min(policy.maxDelayMs, policy.baseMs * 2 ** (attemptsMade - 1)));
}

/** Waits, unless the signal (a run's cancel, the shutdown) ends the wait first: then it rejects at once. */
export function abortableDelay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
