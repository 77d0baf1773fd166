import { isStorageFault } from '../errors.js';

/**
 * Whether the database has been taking writes: the last storage fault (disk full, EIO, read-only
 * storage; errors.ts isStorageFault) a statement met, until a write succeeds after it. /readyz reports
 * it, so a load balancer stops sending work to a replica whose disk is full while its reads still work.
 * A fault older than FAULT_WINDOW_MS with no write since is forgotten: with no traffic nothing would
 * ever clear it, and the next write finds out again.
 */
const FAULT_WINDOW_MS = 60_000;

/** Statements that write (or end a write transaction): their success clears a fault. */
const WRITE = /^\s*(insert|update|delete|commit|replace)\b/i;

export class WriteHealth {
  private fault: { at: number; code: string } | null = null;

  /** Told of every statement's failure; remembers a storage fault. */
  failed(err: unknown): void {
    if (isStorageFault(err)) this.fault = { at: Date.now(), code: String((err as { code: unknown }).code) };
  }

  /** Told of a statement that succeeded: a write clears the fault. */
  succeeded(statement: string): void {
    if (this.fault && WRITE.test(statement)) this.fault = null;
  }

  /** The code of a storage fault met recently with no successful write since, or null. */
  recentFault(): string | null {
    if (this.fault && Date.now() - this.fault.at > FAULT_WINDOW_MS) this.fault = null;
    return this.fault?.code ?? null;
  }
}
