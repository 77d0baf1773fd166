/**
 * A small in-memory cache with a time-to-live and a size bound (oldest entries go first). The
 * authorization hot path keeps what it read from the database here for a short while; writes made
 * through this process clear the affected cache at once, so only changes made by *other* processes
 * (replicas sharing a PostgreSQL database, the CLI) take up to the TTL to be seen.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  /**
   * The entry read last, by its key: hot paths ask for the same key over and over (one access token
   * per caller), and comparing a long key with the last one is cheaper than hashing it for the map.
   */
  private lastKey: string | undefined = undefined;
  private last: { value: V; until: number } | undefined = undefined;

  constructor(
    private readonly ttlMs: number,
    private readonly max = 10_000,
  ) {}

  get(key: string): V | undefined {
    const e = key === this.lastKey ? this.last : this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= Date.now()) {
      this.delete(key);
      return undefined;
    }
    this.lastKey = key;
    this.last = e;
    return e.value;
  }

  set(key: string, value: V, ttlMs = this.ttlMs) {
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.delete(oldest.value);
    }
    const e = { value, until: Date.now() + Math.min(ttlMs, this.ttlMs) };
    this.entries.set(key, e);
    if (key === this.lastKey) this.last = e;
  }

  private delete(key: string) {
    this.entries.delete(key);
    if (key === this.lastKey) this.lastKey = this.last = undefined;
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
    this.lastKey = this.last = undefined;
  }
}

/** How long the hot path may trust what it read about policies, modes and token revocation. */
export const DECISION_CACHE_MS = 1_000;
