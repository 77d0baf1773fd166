/** One field's complaint in a 400 problem: `path` names the field (a JSON pointer such as `/name`). */
export interface FieldError {
  path: string;
  message: string;
}

/**
 * Every failed call: the server's RFC 9457 problem (`status`, `code`, `detail`, `errors`), or for a
 * failure before any answer (network, abort) status 0 and code `network_error` or `aborted`.
 */
export class AgentryError extends Error {
  override readonly name = 'AgentryError';
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly errors: FieldError[];
  /** Seconds the server asked to wait (Retry-After), when it did. */
  readonly retryAfter: number | undefined;
  /** The server's request id (X-Request-Id), to find the request in its logs. */
  readonly requestId: string | undefined;

  constructor(init: {
    status: number;
    code: string;
    detail: string;
    errors?: FieldError[];
    retryAfter?: number;
    requestId?: string;
    cause?: unknown;
  }) {
    super(
      `${init.status ? `${init.status} ` : ''}${init.code}: ${init.detail}`,
      init.cause === undefined ? undefined : { cause: init.cause },
    );
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail;
    this.errors = init.errors ?? [];
    this.retryAfter = init.retryAfter;
    this.requestId = init.requestId;
  }
}

/** A call given up because its AbortSignal fired (the signal's reason is the cause). */
export function abortedError(reason: unknown): AgentryError {
  return new AgentryError({ status: 0, code: 'aborted', detail: 'the request was aborted', cause: reason });
}

/**
 * A request that got no answer: the detail names the method and URL, and the cause's own code (e.g.
 * ECONNREFUSED) when it has one, so "fetch failed" alone never has to be decoded.
 */
export function networkError(request: Request, err: unknown): AgentryError {
  const cause = err instanceof Error ? (err as Error & { cause?: { code?: unknown; message?: unknown } }).cause : undefined;
  const reason = [err instanceof Error ? err.message : String(err), typeof cause?.code === 'string' ? cause.code : undefined]
    .filter(Boolean)
    .join(': ');
  return new AgentryError({ status: 0, code: 'network_error', detail: `${request.method} ${request.url} failed (${reason})`, cause: err });
}

/** Reads a failed response's problem body; a body that is not a problem still gives an error. */
export async function errorFromResponse(response: Response): Promise<AgentryError> {
  const text = await response.text().catch(() => '');
  let body: { code?: unknown; detail?: unknown; title?: unknown; errors?: unknown; error?: unknown; error_description?: unknown } = {};
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    // not JSON: the status and text still say what happened
  }
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return new AgentryError({
    status: response.status,
    // OAuth endpoints answer RFC 6749 bodies ({ error, error_description }).
    code: str(body.code) ?? str(body.error) ?? `http_${response.status}`,
    detail: str(body.detail) ?? str(body.error_description) ?? str(body.title) ?? (text.slice(0, 200) || response.statusText),
    errors: Array.isArray(body.errors) ? (body.errors as FieldError[]) : [],
    retryAfter: retryAfterSeconds(response.headers),
    requestId: response.headers.get('x-request-id') ?? undefined,
  });
}

/** Retry-After (seconds or an HTTP date), else RateLimit-Reset when nothing remains. */
export function retryAfterSeconds(headers: Headers): number | undefined {
  const retryAfter = headers.get('retry-after');
  if (retryAfter) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds)) return Math.max(0, seconds);
    const date = Date.parse(retryAfter);
    if (Number.isFinite(date)) return Math.max(0, Math.ceil((date - Date.now()) / 1000));
  }
  const reset = Number(headers.get('ratelimit-reset'));
  if (headers.get('ratelimit-remaining') === '0' && Number.isFinite(reset)) return Math.max(0, reset);
  return undefined;
}
