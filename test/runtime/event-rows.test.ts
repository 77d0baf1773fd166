import { describe, expect, it } from 'vitest';
import { eventRows, storedEvents, type RunEvent } from '../../src/runs/events.js';

const token = (seq: number, text: string): RunEvent => ({ seq, event: 'token', data: { text } });

describe('stored run events', () => {
  it('stores consecutive tokens as one row under the last seq, and gives every event back with its own seq', () => {
    const events: RunEvent[] = [
      token(1, 'Hello, '),
      token(2, 'where '),
      token(3, 'is "it"?\n'),
      { seq: 4, event: 'tool_call_start', data: { id: 'c1', name: 'add', input: { a: 1 } } },
      { seq: 5, event: 'tool_call_end', data: { id: 'c1', result: { sum: 1 } } },
      token(6, 'one'),
      { seq: 7, event: 'done', data: { runId: 'r', cost: 0 } },
    ];
    const rows = eventRows('r', events);
    expect(rows.map((r) => [r.seq, r.event])).toEqual([
      [3, 'tokens'],
      [4, 'tool_call_start'],
      [5, 'tool_call_end'],
      // A lone token keeps the one-event form.
      [6, 'token'],
      [7, 'done'],
    ]);
    expect(rows.every((r) => r.run_id === 'r')).toBe(true);
    expect(storedEvents(rows)).toEqual(events);
  });

  it('replays from any point, inside a row of tokens too', () => {
    const events = [token(1, 'a '), token(2, 'b '), token(3, 'c '), token(4, 'd'), { seq: 5, event: 'done', data: {} }];
    const rows = eventRows('r', events);
    for (let after = 0; after <= 5; after++) {
      // As the database answers `seq > after`: every row holding a later event.
      const found = rows.filter((r) => r.seq > after);
      expect(storedEvents(found, after)).toEqual(events.filter((e) => e.seq > after));
    }
  });

  it('does not join tokens whose seqs are not consecutive', () => {
    const events = [token(1, 'a'), token(2, 'b'), token(4, 'd'), token(5, 'e')];
    const rows = eventRows('r', events);
    expect(rows.map((r) => [r.seq, r.event, JSON.parse(r.data)])).toEqual([
      [2, 'tokens', ['a', 'b']],
      [5, 'tokens', ['d', 'e']],
    ]);
    expect(storedEvents(rows)).toEqual(events);
  });

  it('reads rows written one event each', () => {
    const rows = [
      { seq: 1, event: 'token', data: '{"text":"x"}' },
      { seq: 2, event: 'done', data: '{}' },
    ];
    expect(storedEvents(rows)).toEqual([token(1, 'x'), { seq: 2, event: 'done', data: {} }]);
  });
});
