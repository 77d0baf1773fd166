/**
 * The process's one clock. Stored timestamps (ids.ts `now()`), cron fire times, misfire decisions,
 * retry back-off and queue eligibility read it, and the scheduler takes it injected, so tests move time
 * by hand instead of waiting. Leases do not: they measure whether a process is alive, which only real
 * time can tell.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that moves only when told to; for tests and simulations. */
export class ManualClock implements Clock {
  private ms: number;

  constructor(start: Date | string) {
    this.ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  set(to: Date | string) {
    this.ms = new Date(to).getTime();
  }

  advance(ms: number) {
    this.ms += ms;
  }
}
