import type { SandboxProcess } from './process.js';

/**
 * Processes of one language started ahead, each handed out once and never returned: a process runs
 * one job and is discarded, so nothing of one tenant's job is left for the next. Filled at the first
 * job (an idle server that never runs code holds none), then topped up at every take.
 */
export class WarmPool {
  readonly #idle = new Set<SandboxProcess>();
  #closed = false;

  constructor(
    private readonly size: number,
    private readonly start: () => SandboxProcess,
  ) {}

  /** A process for one job: a warm one when there is, else a cold one starting now. */
  take(): SandboxProcess {
    const [warm] = this.#idle;
    if (warm) this.#idle.delete(warm);
    const taken = warm ?? this.start();
    this.#fill();
    return taken;
  }

  get idle(): number {
    return this.#idle.size;
  }

  #fill() {
    while (!this.#closed && this.#idle.size < this.size) {
      const process = this.start();
      this.#idle.add(process);
      // One that dies waiting (killed, crashed) leaves the pool; the next take starts another.
      void process.closed.then(() => this.#idle.delete(process));
    }
  }

  async close() {
    this.#closed = true;
    const idle = [...this.#idle];
    this.#idle.clear();
    for (const process of idle) process.kill();
    await Promise.all(idle.map((process) => process.closed));
  }
}
