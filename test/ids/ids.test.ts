import { afterEach, describe, expect, it, vi } from 'vitest';
import { isUuid, newId } from '../../src/ids.js';

/** Ids are UUID v7 (RFC 9562) that sort in the order they were made: they serve as cursors. */
describe('newId', () => {
  afterEach(() => vi.restoreAllMocks());

  const timestampOf = (id: string) => Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
  /** The 42-bit counter in bytes 6-11, around the version and variant bits. */
  const counterOf = (id: string) => {
    const b = Buffer.from(id.replaceAll('-', ''), 'hex');
    return (b[6] & 0x0f) * 2 ** 38 + b[7] * 2 ** 30 + (b[8] & 0x3f) * 2 ** 24 + b[9] * 2 ** 16 + b[10] * 2 ** 8 + b[11];
  };

  it('makes valid, distinct v7 ids that sort in creation order, many per millisecond', () => {
    // The generator never goes back: when a test before this one (in the same worker) moved the clock
    // ahead, ids stay at that time until the clock catches up.
    const held = timestampOf(newId());
    const before = Date.now();
    const ids = Array.from({ length: 20_000 }, () => newId()); // many refills of the random pool
    const after = Date.now();
    for (const id of ids.slice(0, 300)) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe('7'); // the version
      expect('89ab').toContain(id[19]); // RFC 9562 variant
    }
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 1; i < ids.length; i++)
      if (!(ids[i - 1] < ids[i])) throw new Error(`ids ${i - 1} and ${i} out of order: ${ids[i - 1]} ${ids[i]}`);
    expect(timestampOf(ids[0])).toBeGreaterThanOrEqual(before);
    expect(timestampOf(ids.at(-1)!)).toBeLessThanOrEqual(Math.max(after + 1, held));
  });

  it('keeps the order when the clock steps back, by seconds or by an hour', () => {
    for (const back of [5_000, 3_600_000]) {
      const first = newId();
      vi.spyOn(Date, 'now').mockReturnValue(timestampOf(first) - back);
      const later = [newId(), newId(), newId()];
      expect([first, ...later]).toEqual([first, ...later].sort());
      expect(later.map(timestampOf)).toEqual([timestampOf(first), timestampOf(first), timestampOf(first)]);
      vi.restoreAllMocks();
    }
  });

  it('counts up within a millisecond and starts from random bits in the next', () => {
    const t = Date.now() + 10_000;
    const clock = vi.spyOn(Date, 'now').mockReturnValue(t);
    const a = newId();
    const b = newId();
    expect(counterOf(b) - counterOf(a)).toBe(1);
    const starts = new Set<number>();
    for (let i = 2; i < 12; i++) {
      clock.mockReturnValue(t + i);
      starts.add(counterOf(newId()));
    }
    expect(starts.size).toBeGreaterThan(5); // a new random start each millisecond, not a running count
  });
});
