import { ProviderError } from './retries.js';

/**
 * A circuit breaker per model (`provider/name`), per process: after `failureThreshold` provider
 * failures in a row the model is skipped for `coolDownMs`; then one call is let through as a probe
 * (half-open): its success closes the breaker, its failure opens it for another cool-down. A step
 * whose model is skipped goes to the agent's next fallback model (runtime/fallback-step.ts).
 */

/** A step not tried on a model whose breaker is open: to the caller, the provider is unavailable. */
export class BreakerOpenError extends ProviderError {
  constructor(readonly model: string) {
    super('provider_unavailable', `model ${model} is skipped for now: its provider failed too many times in a row (circuit breaker open)`);
  }
}

export interface BreakerSettings {
  /** Provider failures in a row (each failed attempt: a 429, a 5xx, a broken connection) that open the breaker; 0: never. */
  failureThreshold: number;
  /** How long an open breaker skips its model before letting one probe through. */
  coolDownMs: number;
}

export const DEFAULT_BREAKER_SETTINGS: BreakerSettings = { failureThreshold: 5, coolDownMs: 30_000 };

type BreakerStatus = 'closed' | 'open' | 'half_open';

/** What one breaker reports (for metrics and checks; `breakerStates()`). */
export interface BreakerState {
  /** The model, `provider/name`. */
  model: string;
  status: BreakerStatus;
  /** Provider failures in a row so far (0 once a call succeeds). */
  consecutiveFailures: number;
  /** When an open breaker lets its probe through (ms since the epoch); null unless open. */
  retryAt: number | null;
  /** Times the breaker opened since the process started. */
  opened: number;
}

/** One attempt's permission to call the model, and how it ended. */
export interface BreakerTicket {
  success(): void;
  failure(): void;
  /** The attempt ended without telling anything of the provider's health (a cancel, a 400). */
  release(): void;
}

class Breaker {
  private failures = 0;
  private openedAt: number | null = null;
  private probing = false;
  private timesOpened = 0;

  constructor(
    private readonly model: string,
    private readonly settings: BreakerSettings,
    private readonly clock: () => number,
  ) {}

  private status(): BreakerStatus {
    if (this.openedAt === null) return 'closed';
    return this.clock() - this.openedAt >= this.settings.coolDownMs ? 'half_open' : 'open';
  }

  /** A ticket for one attempt, or undefined while the breaker is open (or its one probe is out). */
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
      if (outcome === 'success') {
        this.failures = 0;
        this.openedAt = null;
      } else if (outcome === 'failure') {
        this.failures++;
        // A failed probe opens it again at once; a closed breaker opens at the threshold.
        const threshold = this.settings.failureThreshold;
        if (probe || (this.openedAt === null && threshold > 0 && this.failures >= threshold)) this.open();
      }
    };
    return { success: () => settle('success'), failure: () => settle('failure'), release: () => settle('release') };
  }

  private open() {
    this.openedAt = this.clock();
    this.timesOpened++;
  }

  state(): BreakerState {
    const status = this.status();
    return {
      model: this.model,
      status,
      consecutiveFailures: this.failures,
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
    private readonly clock: () => number = () => Date.now(),
  ) {
    latestBoard = this;
  }

  /** The gate of `model`'s attempts (model-step.ts). */
  gate(model: string) {
    return { model, enter: () => this.enter(model) };
  }

  /** A ticket for one attempt on `model`, or undefined when its breaker skips it. */
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

let latestBoard: BreakerBoard | undefined;

/**
 * The state of each model's breaker in this process (the models called since it started), for
 * metrics and health checks. A process builds one app, so one board; in tests, the last one built.
 */
export function breakerStates(): BreakerState[] {
  return latestBoard?.states() ?? [];
}
