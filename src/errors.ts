/**
 * The errors domains throw when they refuse or cannot do what was asked. They say what happened in
 * the domain's words, each with a stable `code`; only the HTTP layer's error handler (`problemOf`)
 * decides which status, headers and problem body each kind becomes. Other callers (the task worker,
 * the CLI) read them by type.
 */

/** A field of the input and what is wrong with it. */
export interface FieldError {
  path: string;
  message: string;
}

export abstract class DomainError extends Error {
  abstract readonly kind: string;
  constructor(
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail);
    this.name = new.target.name;
  }
}

/** The named resource does not exist (or the caller may not know it does). */
export class NotFound extends DomainError {
  readonly kind = 'not_found';
  constructor(
    readonly resource: string,
    detail = `${resource} not found`,
  ) {
    super('not_found', detail);
  }
}

/** The resource's state does not allow the request (already paused, not active, busy, ...). */
export class Conflict extends DomainError {
  readonly kind = 'conflict';
}

/** The input is wrong in a way its schema could not say; `errors` names the fields. */
export class InvalidInput extends DomainError {
  readonly kind = 'invalid_input';
  constructor(
    detail: string,
    readonly errors?: FieldError[],
    code = 'validation_failed',
  ) {
    super(code, detail);
  }
}

/** The caller is known but may not do this. */
export class Forbidden extends DomainError {
  readonly kind = 'forbidden';
  constructor(detail: string) {
    super('forbidden', detail);
  }
}

/** The request does not prove who sent it; `scheme` is how it should (`Bearer`, `HMAC-SHA256`). */
export class Unauthenticated extends DomainError {
  readonly kind = 'unauthenticated';
  constructor(
    code: string,
    detail: string,
    readonly scheme: string,
  ) {
    super(code, detail);
  }
}

/** A limit on how much or how often (requests, concurrent runs) is reached; it may pass by itself. */
export class LimitExceeded extends DomainError {
  readonly kind = 'limit_exceeded';
  constructor(
    code: string,
    detail: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(code, detail);
  }
}

/** A monthly budget is spent; only a new month or a larger budget lets more runs start. */
export class BudgetExceeded extends DomainError {
  readonly kind = 'budget_exceeded';
  constructor(detail: string) {
    super('budget_exceeded', detail);
  }
}

/** This server cannot do it now (stopping, the database away); retrying, here or elsewhere, may. */
export class Unavailable extends DomainError {
  readonly kind = 'unavailable';
  constructor(
    code: string,
    detail: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(code, detail);
  }
}

/** The request is well formed but contradicts what was recorded for it (an Idempotency-Key reused with another body). */
export class Unprocessable extends DomainError {
  readonly kind = 'unprocessable';
}

/** A run the caller waited for ended failed (its model or a tool failed); `code` is the run's error code. */
export class RunFailed extends DomainError {
  readonly kind = 'run_failed';
}

/** Every domain error there is: the HTTP layer maps each, and the compiler checks it misses none. */
export type AnyDomainError =
  | NotFound
  | Conflict
  | InvalidInput
  | Forbidden
  | Unauthenticated
  | LimitExceeded
  | BudgetExceeded
  | Unavailable
  | Unprocessable
  | RunFailed;

const DB_UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300', // too_many_connections
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);

/**
 * Storage that cannot take writes: SQLite's disk full, I/O errors (EIO) and read-only file or file
 * system (EROFS), and PostgreSQL's disk_full, io_error and a read-only transaction (a standby, or the
 * database set read-only). Not a bug of the request: it may succeed once the operator frees space or
 * repairs the disk, and reads still work meanwhile.
 */
export function isStorageFault(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return false;
  return /^SQLITE_(FULL|IOERR|READONLY)/.test(code) || code === '53100' || code === '58030' || code === '25006';
}

/**
 * True when PostgreSQL aborted the statement's transaction for meeting another one: a deadlock (40P01)
 * or a serialization failure (40001). Nothing of that transaction was written, and trying again succeeds.
 */
export function isTransactionConflict(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === '40P01' || code === '40001';
}

/** True for errors that mean "the database cannot be reached right now", not a bug. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && DB_UNAVAILABLE_CODES.has(e.code)) return true;
  const message = typeof e?.message === 'string' ? e.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection is closed|driver has already been destroyed/i.test(
    message,
  );
}
