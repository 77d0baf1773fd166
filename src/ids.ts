import { randomUUID } from 'node:crypto';
import { V7Generator } from 'uuidv7';
import { type Clock, systemClock } from './clock.js';

/**
 * The uuidv7 package keeps the ordering state: within one millisecond, or while the clock is behind
 * the last id's time, its 42-bit counter after the timestamp counts up from a random start. By default
 * it starts afresh when the clock steps back more than 10 s; ids are cursors, so it never does here.
 * It draws random bytes 32 at a time, where the uuid package drew 16 fresh bytes for every id
 * (docs/benchmarks.md).
 */
const ids = new V7Generator();
ids.setRollbackAllowance(2 ** 48 - 1);

/** New identifier: a UUID v7 (RFC 9562), so ids sort by creation time and serve as cursors. */
export function newId(): string {
  return ids.generate().toString();
}

/**
 * Request ids (`x-request-id`, the logs): random UUIDs. Node draws them from a pooled entropy buffer,
 * where a v7 id draws fresh random bytes each time (5% of a cached GET's CPU); log lines carry their own
 * time, so request ids need not sort.
 */
export function newRequestId(): string {
  return randomUUID();
}

/**
 * The current time as stored and returned everywhere: ISO 8601 UTC with milliseconds. A domain whose
 * stored times expire or fall due passes its clock (clock.ts); stamps nothing is decided by read real time.
 */
export function now(clock: Clock = systemClock): string {
  return new Date(clock.now()).toISOString();
}

export const isUuid = (value: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
