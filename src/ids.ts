import { v7 } from 'uuid';
import { systemClock } from './scheduler/clock.js';

/**
 * New identifier: a UUID v7 (RFC 9562), so ids sort by creation time and serve as cursors. The uuid
 * package keeps the ordering state: within one millisecond (or when the clock steps back) the counter
 * after the timestamp counts up from a random start.
 */
export function newId(): string {
  return v7();
}

/** Request ids (`x-request-id`, the logs): the same v7 ids, so a log line's request sorts by time. */
export function newRequestId(): string {
  return newId();
}

/** The current time as stored and returned everywhere: ISO 8601 UTC with milliseconds. */
export function now(): string {
  return systemClock.now().toISOString();
}

export const isUuid = (value: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
