import {
  Conflict,
  DomainError,
  LimitExceeded,
  NotFound,
  Unavailable,
  isDatabaseUnavailable,
  isStorageFault,
  isTransactionConflict,
} from '../errors.js';
import type { RunError } from '../runs/views.js';

/**
 * How tasks read the errors of the domains they call: by their type (src/errors.ts). This module is
 * the one place in tasks that looks at them, so the worker and the service decide on typed outcomes.
 */

/** Why a task's run (or approval action) did not start, and what the job records. */
export type StartFailure =
  /**
   * Refused for now, not for the task's sake (the tenant's concurrency limit, this replica stopping, a
   * transaction PostgreSQL aborted as a deadlock): try again later.
   */
  | { kind: 'refused_for_now'; retryAfterSeconds: number; error: RunError }
  /** The database could not be reached: no run was written, and the attempt is not the task's to spend. */
  | { kind: 'database_unavailable'; retryAfterSeconds: number; error: RunError }
  /** The task's agent no longer exists. */
  | { kind: 'agent_gone'; error: RunError }
  /** A rule refused it (agent paused, budget spent, ...): the attempt fails. */
  | { kind: 'refused'; error: RunError }
  /** A fault, not a decision: logged, and the attempt fails. */
  | { kind: 'unexpected'; error: RunError };

const AGENT_GONE: RunError = { code: 'agent_not_found', message: 'the task’s agent no longer exists' };
const DATABASE_UNAVAILABLE: RunError = { code: 'database_unavailable', message: 'the database could not be reached' };
const STORAGE_UNAVAILABLE: RunError = {
  code: 'storage_unavailable',
  message: 'the database could not write (disk full, failing or read-only)',
};
/** How long a job whose start met a storage fault waits: an operator has to free space or repair the disk. */
const STORAGE_RETRY_SECONDS = 30;
/** How long a job whose start met a database outage waits before it is claimed again. */
const DATABASE_RETRY_SECONDS = 5;
const TRANSACTION_CONFLICT: RunError = {
  code: 'transaction_conflict',
  message: 'the database aborted the start’s transaction for meeting another one (a deadlock); nothing of it was written',
};
/** How long a job whose start's transaction was aborted for meeting another waits: the other has ended by then. */
const CONFLICT_RETRY_SECONDS = 1;
/** How long a job refused for now waits when the refusal names no time. */
const REFUSED_RETRY_SECONDS = 5;

export function startFailure(err: unknown): StartFailure {
  // Not the task's fault either: the attempt is not spent.
  if (isStorageFault(err)) return { kind: 'database_unavailable', retryAfterSeconds: STORAGE_RETRY_SECONDS, error: STORAGE_UNAVAILABLE };
  if (isDatabaseUnavailable(err) || (err instanceof Unavailable && err.code === 'database_unavailable')) {
    return { kind: 'database_unavailable', retryAfterSeconds: DATABASE_RETRY_SECONDS, error: DATABASE_UNAVAILABLE };
  }
  if (isTransactionConflict(err))
    return { kind: 'refused_for_now', retryAfterSeconds: CONFLICT_RETRY_SECONDS, error: TRANSACTION_CONFLICT };
  if (!(err instanceof DomainError)) {
    return { kind: 'unexpected', error: { code: 'internal_error', message: 'the run could not start; the error is in the server log' } };
  }
  if (err instanceof NotFound) return { kind: 'agent_gone', error: AGENT_GONE };
  const error = { code: err.code, message: err.detail };
  if (err instanceof LimitExceeded || err instanceof Unavailable) {
    return { kind: 'refused_for_now', retryAfterSeconds: Math.max(1, err.retryAfterSeconds ?? REFUSED_RETRY_SECONDS), error };
  }
  return { kind: 'refused', error };
}

/** A refusal the caller is told about as it is (it was recorded on the job); anything else is a fault. */
export const isRefusal = (err: unknown): err is DomainError => err instanceof DomainError;

/** What an approval action's failure records: a refusal's own code, or `action_failed`. */
export function actionError(err: unknown): RunError {
  if (isRefusal(err)) return { code: err.code, message: err.detail };
  return { code: 'action_failed', message: err instanceof Error ? err.message : String(err) };
}

/** The answer to a person whose task's agent no longer exists. */
export const agentGone = () => new Conflict(AGENT_GONE.code, AGENT_GONE.message);

export const isNotFound = (err: unknown) => err instanceof NotFound;

/** Cancelling a run that already ended. */
export const isRunNotActive = (err: unknown) => err instanceof Conflict && err.code === 'run_not_active';
