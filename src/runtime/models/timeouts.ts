import type { ProviderFailure } from './retries.js';

/**
 * How long one attempt of a model call may take (docs/models.md, "Timeouts"): a provider that accepts
 * the connection and never answers, or stops half-way, must not hold a run. Each limit that passes
 * aborts the attempt as a retryable `provider_timeout`.
 */
export interface ModelTimeouts {
  /** From the request to the provider's answer (its response headers). */
  firstByteMs: number;
  /** Between two parts of the streamed answer. */
  idleMs: number;
  /** The whole attempt, however steadily it streams. */
  totalMs: number;
}

/** What a user expects of a hosted model: a minute to start answering, a minute of silence at most, ten minutes in all. */
export const DEFAULT_MODEL_TIMEOUTS: ModelTimeouts = { firstByteMs: 60_000, idleMs: 60_000, totalMs: 600_000 };

type Limit = 'first byte' | 'idle' | 'total';

/**
 * The clock of one attempt: its signal aborts when a limit passes (or the run's own signal does).
 * `answered()` when the provider's answer starts, `progress()` at each part; `stop()` once it ended.
 */
export class AttemptTimer {
  private readonly controller = new AbortController();
  readonly signal: AbortSignal;
  /** The limit that passed, once one did. */
  passed: Limit | undefined;
  private readonly total: NodeJS.Timeout;
  private phase: NodeJS.Timeout;

  constructor(
    private readonly limits: ModelTimeouts,
    outer?: AbortSignal,
  ) {
    this.signal = outer ? AbortSignal.any([outer, this.controller.signal]) : this.controller.signal;
    this.total = setTimeout(() => this.fire('total'), limits.totalMs).unref();
    this.phase = setTimeout(() => this.fire('first byte'), limits.firstByteMs).unref();
  }

  private fire(limit: Limit) {
    if (this.passed) return;
    this.passed = limit;
    this.controller.abort(new Error(`model call timed out (${limit})`));
  }

  /** The answer started: from now on the idle limit applies between parts. */
  answered() {
    clearTimeout(this.phase);
    this.phase = setTimeout(() => this.fire('idle'), this.limits.idleMs).unref();
  }

  /** A part arrived: the idle limit starts again (refresh: no new timer per token). */
  progress() {
    this.phase.refresh();
  }

  stop() {
    clearTimeout(this.phase);
    clearTimeout(this.total);
  }

  /** The attempt's failure once a limit passed: retryable, with the limit in words. */
  failure(): ProviderFailure {
    const ms = this.passed === 'first byte' ? this.limits.firstByteMs : this.passed === 'idle' ? this.limits.idleMs : this.limits.totalMs;
    const what =
      this.passed === 'first byte'
        ? `no answer began within ${ms} ms`
        : this.passed === 'idle'
          ? `its answer stalled for ${ms} ms`
          : `its answer took longer than ${ms} ms`;
    return { code: 'provider_timeout', retryable: true, message: `the provider did not answer in time: ${what}` };
  }
}
