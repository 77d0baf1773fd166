import type { FastifyBaseLogger } from 'fastify';
import { Loop } from './loop.js';

export interface DispatcherOptions<J> {
  /** Worker slots: at most this many pieces of work execute here at once. */
  workers: number;
  /** How often to look for due work when nothing woke the dispatcher. */
  pollMs: number;
  /** Takes up to `limit` pieces of work under a lease, in the order to start them: fewer when the queue has fewer. */
  claim(limit: number): Promise<J[]>;
  /** Executes a claimed piece of work; the slot frees when the promise settles. */
  execute(work: J): Promise<void>;
  log: FastifyBaseLogger;
}

/**
 * A worker pool fed from the database queue. Each pass claims work while slots are free, as many
 * pieces per claim as slots are free (a burst of work costs a claim per batch, not per piece); a
 * slot freeing, or work enqueued in this process (`wake`), starts a pass at once; otherwise the queue
 * is polled every `pollMs` (work enqueued by other replicas, retries whose back-off has passed).
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
      // Slots only free up while the claim is out, so what it brings always fits.
      const free = this.options.workers - this.busy;
      const claimed = await this.options.claim(free);
      for (const work of claimed) this.run(work);
      if (claimed.length < free) return;
    }
  }

  private run(work: J) {
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
