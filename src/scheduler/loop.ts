import type { FastifyBaseLogger } from 'fastify';

/**
 * A background duty run every `intervalMs`, one pass at a time. `wake()` asks for a pass now
 * (coalesced: a wake during a pass runs one more pass right after it).
 */
export class Loop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly pass: () => Promise<void>,
    private readonly log: FastifyBaseLogger,
  ) {}

  start() {
    this.stopped = false;
    this.wake();
  }

  wake() {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.run();
  }

  private async run() {
    do {
      this.again = false;
      try {
        await this.pass();
      } catch (err) {
        if (!this.stopped) this.log.error({ err }, `${this.name} failed`);
      }
    } while (this.again && !this.stopped);
    this.running = null;
    if (!this.stopped) {
      this.timer = setTimeout(() => this.wake(), this.intervalMs);
      this.timer.unref();
    }
  }

  /** Stops the loop and waits for a pass under way to end. */
  async stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
