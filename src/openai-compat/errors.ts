/**
 * Problems (the app's one error format, made in http/errors.ts) in OpenAI's error shape, for the
 * /v1 routes only: `{"error":{"message","type","code","param"}}`. Statuses stay as the problem says,
 * except a spent budget (402 elsewhere), which OpenAI clients know as 429 `insufficient_quota`.
 */

interface ProblemLike {
  status: number;
  code: string;
  detail: string;
  errors?: { path: string; message: string }[];
}

export interface OpenAiErrorResponse {
  status: number;
  body: { error: { message: string; type: string; code: string | null; param: string | null } };
  /** Headers to add: whether the official clients should retry (they retry 429 and 5xx by default). */
  headers: Record<string, string>;
}

function typeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** Seconds until the next calendar month (UTC), when a monthly budget starts again. */
function secondsToNextMonth(at = new Date()): number {
  const next = Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - at.getTime()) / 1000));
}

/**
 * `runStarted`: the error came after the run had started (a failure, a cancel, a 5xx while it ran): the
 * official clients must not retry it, or each retry would start (and bill) another run. Errors before a
 * start keep their default retry behaviour (a 429 rate limit, a 503 while draining).
 */
export function openAiError(problem: ProblemLike, { runStarted = false }: { runStarted?: boolean } = {}): OpenAiErrorResponse {
  // `body.n` -> `n`: the parameter as the client named it.
  const path = problem.errors?.[0]?.path;
  const param = path ? path.replace(/^body\./, '') : null;
  if (problem.status === 402) {
    return {
      status: 429,
      body: { error: { message: problem.detail, type: 'insufficient_quota', code: problem.code, param } },
      headers: { 'retry-after': String(secondsToNextMonth()), 'x-should-retry': 'false' },
    };
  }
  // A run that failed would run (and cost) again if retried: the client decides, not its retry loop.
  const headers: Record<string, string> = runStarted || problem.status === 502 ? { 'x-should-retry': 'false' } : {};
  return {
    status: problem.status,
    body: { error: { message: problem.detail, type: typeOf(problem.status), code: problem.code, param } },
    headers,
  };
}
