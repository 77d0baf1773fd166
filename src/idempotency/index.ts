import { type IdempotencyOptions, IdempotencyService } from './service.js';

export interface IdempotencyDomain {
  /** Idempotency-Key claims: the run starter (runs) and task creation (tasks) ask it. It has no routes, so no plugin. */
  idempotency: IdempotencyService;
}

/** Builds the idempotency domain. */
export function createIdempotencyDomain(options: IdempotencyOptions): IdempotencyDomain {
  return { idempotency: new IdempotencyService(options) };
}
