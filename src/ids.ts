import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

/**
 * Random bytes for new ids, drawn 4 KiB at a time (256 ids) instead of the uuid package's 256 bytes
 * (16 ids): each refill is a call into OpenSSL, and ids are made several per run. The pool is
 * refilled in place: v7() has copied its 16 bytes before it returns.
 */
const pool = new Uint8Array(4096);
let taken = pool.length;
/** The millisecond and counter of the last id, so that ids made within one millisecond still sort in order. */
let lastMs = -Infinity;
let counter = 0;

/**
 * New identifier: a UUID v7 (RFC 9562), so ids sort by creation time and serve as cursors. Within
 * one millisecond (or when the clock steps back) the 32-bit counter after the timestamp counts up
 * from a random start, as the uuid package does when it keeps this state itself (it does not when
 * given the random bytes).
 */
export function newId(): string {
  if (taken + 16 > pool.length) {
    randomFillSync(pool);
    taken = 0;
  }
  const random = pool.subarray(taken, (taken += 16));
  const ms = Date.now();
  if (ms > lastMs) {
    lastMs = ms;
    counter = (random[6] << 23) | (random[7] << 16) | (random[8] << 8) | random[9];
  } else {
    counter = (counter + 1) | 0;
    if (counter === 0) lastMs++; // the counter ran over: borrow the next millisecond
  }
  return v7({ random, msecs: lastMs, seq: counter });
}

/** The current time as stored and returned everywhere: ISO 8601 UTC with milliseconds. */
export const now = (): string => new Date().toISOString();

export const isUuid = (value: string): boolean =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
