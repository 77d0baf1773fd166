/**
 * Problems (the app's one error format, made in http/errors.ts) in OpenAI's error shape, for the
 * /v1 routes only: `{"error":{"message","type","code","param"}}`. Statuses stay as the problem says,
 * except a spent budget (402 elsewhere), which OpenAI clients know as 429 `insufficient_quota`, and
 * outcomes a retry cannot change (docs/clients.md, "Failures and retries"): those are 400, the one
 * family that openai (npm and Python), the AI SDK and LangChain all leave alone. openai retries 408,
 * 409, 429 and 5xx unless told `X-Should-Retry: false`; the AI SDK (APICallError.isRetryable) the same
 * statuses, ignoring the header; LangChain's AsyncCaller everything but 400-407, 409 and 413.
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

/**
 * Conflicts that retrying does not resolve: the agent paused or hosted elsewhere, the conversation
 * another agent's, user's or closed. A busy conversation or a key still starting may clear: those stay 409.
 */
const RETRY_MAY_CLEAR = new Set(['conversation_busy', 'idempotency_key_in_use']);

/** The statuses some official client retries by default (the union of their rules above). */
const retriedByClients = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;

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
 * `runStarted`: the error came after the run had started. Its end (failed, cancelled, still waiting for
 * a person) is final: 400, so that no client's retry starts (and bills) another run; an unexpected 5xx
 * keeps its status with `X-Should-Retry: false` (a retry with the same Idempotency-Key answers the
 * same run). Before a start, a conflict no retry resolves (a paused agent) is 400 too; the rest keep
 * their default retry behaviour (a 429 rate limit, a 503 while draining).
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
  // A run's end (502 failed, 409 cancelled or still waiting) would run (and cost) again if retried.
  const ended = problem.status === 502 || (runStarted && problem.status === 409);
  const final = ended || (problem.status === 409 && !RETRY_MAY_CLEAR.has(problem.code));
  const headers: Record<string, string> = runStarted || final ? { 'x-should-retry': 'false' } : {};
  return {
    status: final && retriedByClients(problem.status) ? 400 : problem.status,
    // The type says whose failure it is, as the original status did: server_error for a run that failed.
    body: { error: { message: problem.detail, type: typeOf(problem.status), code: problem.code, param } },
    headers,
  };
}
