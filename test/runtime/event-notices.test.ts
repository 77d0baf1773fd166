import { describe, expect, it } from 'vitest';
import { NewEventNotices, runsNoticed } from '../../src/runs/events.js';

const turn = () => new Promise<void>((r) => setImmediate(r));

/**
 * The `run.events` signals (runs/events.ts): every run whose events were written during one turn of
 * the event loop is named in one signal (on PostgreSQL, one NOTIFY), at most 100 runs per signal.
 */
describe('new-event notices', () => {
  it('names every run written in a turn in one signal, with its latest seq', async () => {
    const sent: [string, number][][] = [];
    const notices = new NewEventNotices(async (runs) => void sent.push(runs));
    notices.add('r1', 1);
    notices.add('r2', 1);
    notices.add('r1', 3);
    expect(sent).toEqual([]);
    await turn();
    expect(sent).toEqual([
      [
        ['r1', 3],
        ['r2', 1],
      ],
    ]);
    notices.add('r2', 2);
    await turn();
    expect(sent[1]).toEqual([['r2', 2]]);
    expect(runsNoticed({ runs: sent[0] })).toEqual(['r1', 'r2']);
  });

  it('splits a turn of many runs into signals of at most 100 (NOTIFY carries 8000 bytes)', async () => {
    const sent: [string, number][][] = [];
    const notices = new NewEventNotices(async (runs) => void sent.push(runs));
    const ids = Array.from({ length: 250 }, (_, i) => `01936f4e-7c2a-7b3e-9d41-${String(i).padStart(12, '0')}`);
    for (const id of ids) notices.add(id, 123456);
    await turn();
    expect(sent.map((s) => s.length)).toEqual([100, 100, 50]);
    expect(sent.flat().map(([id]) => id)).toEqual(ids);
    for (const runs of sent) expect(JSON.stringify({ topic: 'run.events', payload: { runs } }).length).toBeLessThan(8000);
  });

  it('a failed signal is dropped without an unhandled rejection; the next turn signals again', async () => {
    let calls = 0;
    const notices = new NewEventNotices(async () => {
      calls++;
      throw new Error('no connection');
    });
    notices.add('r1', 1);
    await turn();
    notices.add('r1', 2);
    await turn();
    expect(calls).toBe(2);
  });

  it('reads the one-run form older replicas send', () => {
    expect(runsNoticed({ runId: 'r9', seq: 4 })).toEqual(['r9']);
    expect(runsNoticed({})).toEqual([]);
  });
});
