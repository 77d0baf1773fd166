/**
 * The process's one clock, in epoch milliseconds as `Date.now()` answers: the identity hot path
 * compares expiries on every request without making a Date, and whoever stores a time formats it
 * (ids.ts `now(clock)`). The app's clock is given once (`createServices(config, db, { clock })`) and
 * passed to every service at construction. It decides what a test must be able to move by hand:
 * stored times that expire or fall due (approvals, Idempotency-Key claims, task schedules, queue
 * eligibility and back-off, webhook signature ages, retention ages, identity keys and tokens) and every
 * in-memory expiry (TtlCache).
 *
 * Real time on purpose, never this clock: leases (they measure whether a process is alive, which only
 * real time can tell) and the length of real waits (poll deadlines, timeouts, retry pauses, latencies),
 * which a stopped clock would make endless.
 */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

/** A clock that moves only when told to; for tests and simulations. */
export class ManualClock implements Clock {
  private ms: number;

  constructor(start: Date | string | number = Date.now()) {
    this.ms = new Date(start).getTime();
  }

  now(): number {
    return this.ms;
  }

  set(to: Date | string | number) {
    this.ms = new Date(to).getTime();
  }

  advance(ms: number) {
    this.ms += ms;
  }
}
