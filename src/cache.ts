import { LRUCache } from 'lru-cache';
import type { Clock } from './clock.js';

export interface TtlCacheOptions {
  /** How long an entry is kept at most. */
  ttlMs: number;
  /** Entries kept at most (least recently used out first). */
  max?: number;
  /** The app's clock (clock.ts): entries expire on it, so a test moves time instead of waiting. */
  clock: Clock;
}

/**
 * What was read from the database, kept for a short time: an lru-cache (least recently used out
 * first past `max`) whose entries expire `ttlMs` after they were set. Writes made through this
 * process clear or replace the entries they affect at once, so only changes made by *other*
 * processes (replicas sharing a PostgreSQL database, the CLI) take up to the TTL to be seen. Reads
 * that must be current at once use db/changes.ts ReadCache (lru-cache too, trusted by table stamps).
 * Every cache in src/ whose entries expire is one of these.
 */
export class TtlCache<V> {
  // The expiry is kept with the value, not as lru-cache's ttl, so an entry is gone exactly at its
  // end (lru-cache keeps it for that millisecond) and a read needs no timer.
  private readonly entries: LRUCache<string, { value: V; until: number }>;
  private readonly ttlMs: number;
  private readonly clock: Clock;

  constructor({ ttlMs, max = 10_000, clock }: TtlCacheOptions) {
    this.ttlMs = ttlMs;
    this.clock = clock;
    this.entries = new LRUCache({ max });
  }

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= this.clock.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Keeps `value` for `ttlMs`, never longer than the cache's own TTL. */
  set(key: string, value: V, ttlMs = this.ttlMs) {
    this.entries.set(key, { value, until: this.clock.now() + Math.min(ttlMs, this.ttlMs) });
  }

  delete(key: string) {
    this.entries.delete(key);
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
