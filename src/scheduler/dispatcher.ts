import type { FastifyBaseLogger } from 'fastify';
import { Loop } from './loop.js';

export interface DispatcherOptions<J> {
  /** Worker slots: at most this many pieces of work execute here at once. */
  workers: number;
  /** How often to look for due work when nothing woke the dispatcher. */
  pollMs: number;
  /** Takes the next piece of work under a lease: null when there is none. */
  claim(): Promise<J | null>;
  /** Executes a claimed piece of work; the slot frees when the promise settles. */
  execute(work: J): Promise<void>;
  log: FastifyBaseLogger;
}

/**
 * A worker pool fed from the database queue. Each pass claims work while slots are free; a slot
 * freeing, or work enqueued in this process (`wake`), starts a pass at once; otherwise the queue is
 * polled every `pollMs` (work enqueued by other replicas, retries whose back-off has passed).
 */
export class Dispatcher<J> {
  private busy = 0;
  private readonly loop: Loop;

  constructor(private readonly options: DispatcherOptions<J>) {
    this.loop = new Loop('task dispatcher', options.pollMs, () => this.pass(), options.log);
  }

  /** Work executing in this process's slots. */
  get activeCount() {
    return this.busy;
  }

  start() {
    this.loop.start();
  }

  wake() {
    this.loop.wake();
  }

  stop() {
    return this.loop.stop();
  }

  private async pass() {
    while (this.busy < this.options.workers) {
      const work = await this.options.claim();
      if (work === null) return;
      this.busy++;
      void this.options
        .execute(work)
        .catch((err) => this.options.log.error({ err }, 'task work failed unexpectedly'))
        .finally(() => {
          this.busy--;
          this.loop.wake();
        });
    }
  }
}
