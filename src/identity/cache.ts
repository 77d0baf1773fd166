/**
 * A small in-memory cache with a time-to-live and a size bound (oldest entries go first). The
 * authorization hot path keeps what it read from the database here for a short while; writes made
 * through this process clear the affected cache at once, so only changes made by *other* processes
 * (replicas sharing a PostgreSQL database, the CLI) take up to the TTL to be seen.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly max = 10_000,
  ) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: V, ttlMs = this.ttlMs) {
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, until: Date.now() + Math.min(ttlMs, this.ttlMs) });
  }

  /** Cached value, or `load()` stored for the TTL (failures are not cached). */
  async through(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const value = await load();
    this.set(key, value);
    return value;
  }

  clear() {
    this.entries.clear();
  }
}

/** How long the hot path may trust what it read about policies, modes and token revocation. */
export const DECISION_CACHE_MS = 1_000;
