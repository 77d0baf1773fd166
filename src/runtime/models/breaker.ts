import { type Clock, systemClock } from '../../clock.js';
import { ProviderError } from './retries.js';

/**
 * A circuit breaker per model (`provider/name`), per process. It exists to stop hammering a provider
 * that is down, not to amplify a flaky one, so it counts each logical model call once, by how it ended
 * after its retries (not each attempt), leaves rate limits out (a 429 says "slower", not "down"), and
 * opens only on a sustained failure rate: in the last `windowMs`, at least `minFailures` failed calls
 * and at least `failureRatePercent` % of the calls that ended. Open, the model is skipped for
 * `coolDownMs`; then one call is let through as a probe (half-open): its success closes the breaker
 * (and forgets the window), its failure opens it for another cool-down. A step whose model is skipped
 * goes to the agent's next fallback model (runtime/fallback-step.ts).
 */

/** A step not tried on a model whose breaker is open: to the caller, the provider is unavailable. */
export class BreakerOpenError extends ProviderError {
  constructor(readonly model: string) {
    super(
      'provider_unavailable',
      `model ${model} is skipped for now: most of its recent calls failed on its provider (circuit breaker open)`,
    );
  }
}

export interface BreakerSettings {
  /** Failed calls (each after its retries) in the window below which the breaker never opens; 0: never opens. */
  minFailures: number;
  /** The share of the window's ended calls, in percent, that must have failed for it to open. */
  failureRatePercent: number;
  /** How far back calls count (a sliding window, in ten slices). */
  windowMs: number;
  /** How long an open breaker skips its model before letting one probe through. */
  coolDownMs: number;
}

export const DEFAULT_BREAKER_SETTINGS: BreakerSettings = { minFailures: 5, failureRatePercent: 80, windowMs: 60_000, coolDownMs: 30_000 };

type BreakerStatus = 'closed' | 'open' | 'half_open';

/** What one breaker reports (for metrics and checks; `breakerStates()`). */
export interface BreakerState {
  /** The model, `provider/name`. */
  model: string;
  status: BreakerStatus;
  /** Calls that ended (succeeded or failed; rate limits and cancels left out) in the window so far. */
  recentCalls: number;
  /** Of those, the ones that failed on the provider. */
  recentFailures: number;
  /** When an open breaker lets its probe through (ms since the epoch); null unless open. */
  retryAt: number | null;
  /** Times the breaker opened since the process started. */
  opened: number;
}

/** One logical call's permission to use the model (its retries included), and how it ended. */
export interface BreakerTicket {
  /** The half-open breaker's one probe: a single attempt, not retried (its failure reopens the breaker). */
  readonly probe: boolean;
  success(): void;
  /** The provider failed the call for good (its retries spent, or a stream broken part-way). */
  failure(): void;
  /** The call ended without telling anything of the provider's health (rate limited, a cancel, a 400). */
  release(): void;
}

const SLICES = 10;

/** Counts in one slice of the window. */
interface Slice {
  start: number;
  calls: number;
  failures: number;
}

class Breaker {
  private slices: Slice[] = [];
  private openedAt: number | null = null;
  private probing = false;
  private timesOpened = 0;

  constructor(
    private readonly model: string,
    private readonly settings: BreakerSettings,
    private readonly clock: Clock,
  ) {}

  private status(): BreakerStatus {
    if (this.openedAt === null) return 'closed';
    return this.clock.now() - this.openedAt >= this.settings.coolDownMs ? 'half_open' : 'open';
  }

  /** The window's slices still in it, the older ones dropped. */
  private recent(): Slice[] {
    const since = this.clock.now() - this.settings.windowMs;
    this.slices = this.slices.filter((s) => s.start > since - this.settings.windowMs / SLICES);
    return this.slices;
  }

  private record(failed: boolean) {
    const at = this.clock.now();
    const width = Math.max(1, this.settings.windowMs / SLICES);
    const start = at - (at % width);
    const slices = this.recent();
    let slice = slices.at(-1);
    if (!slice || slice.start !== start) {
      slice = { start, calls: 0, failures: 0 };
      slices.push(slice);
    }
    slice.calls++;
    if (failed) slice.failures++;
  }

  private counts() {
    let calls = 0;
    let failures = 0;
    for (const s of this.recent()) {
      calls += s.calls;
      failures += s.failures;
    }
    return { calls, failures };
  }

  /** A ticket for one call, or undefined while the breaker is open (or its one probe is out). */
  enter(): BreakerTicket | undefined {
    const status = this.status();
    if (status === 'open') return undefined;
    if (status === 'half_open') {
      if (this.probing) return undefined;
      this.probing = true;
    }
    const probe = status === 'half_open';
    let settled = false;
    const settle = (outcome: 'success' | 'failure' | 'release') => {
      if (settled) return;
      settled = true;
      if (probe) this.probing = false;
      if (outcome === 'release') return;
      if (probe) {
        // The probe decides alone: a success closes the breaker with a fresh window, a failure opens it again.
        if (outcome === 'success') {
          this.openedAt = null;
          this.slices = [];
        } else this.open();
        return;
      }
      this.record(outcome === 'failure');
      if (outcome === 'failure' && this.openedAt === null && this.sustained()) this.open();
    };
    return { probe, success: () => settle('success'), failure: () => settle('failure'), release: () => settle('release') };
  }

  /** Enough failures in the window, and a large enough share of its calls. */
  private sustained(): boolean {
    const { minFailures, failureRatePercent } = this.settings;
    if (minFailures <= 0) return false;
    const { calls, failures } = this.counts();
    return failures >= minFailures && failures * 100 >= failureRatePercent * calls;
  }

  private open() {
    this.openedAt = this.clock.now();
    this.timesOpened++;
  }

  state(): BreakerState {
    const status = this.status();
    const { calls, failures } = this.counts();
    return {
      model: this.model,
      status,
      recentCalls: calls,
      recentFailures: failures,
      retryAt: status === 'open' ? this.openedAt! + this.settings.coolDownMs : null,
      opened: this.timesOpened,
    };
  }
}

/** The breakers of one process's models, made on first use. */
export class BreakerBoard {
  private readonly breakers = new Map<string, Breaker>();

  constructor(
    readonly settings: BreakerSettings = DEFAULT_BREAKER_SETTINGS,
    /** Real time by default: the failure rate is of real calls, whose timeouts are real. */
    private readonly clock: Clock = systemClock,
  ) {}

  /** The gate of `model`'s calls (model-step.ts). */
  gate(model: string) {
    return { model, enter: () => this.enter(model) };
  }

  /** A ticket for one call to `model`, or undefined when its breaker skips it. */
  enter(model: string): BreakerTicket | undefined {
    let breaker = this.breakers.get(model);
    if (!breaker) {
      breaker = new Breaker(model, this.settings, this.clock);
      this.breakers.set(model, breaker);
    }
    return breaker.enter();
  }

  states(): BreakerState[] {
    return [...this.breakers.values()].map((b) => b.state());
  }
}
