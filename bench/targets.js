// How each target of the benchmark is judged, from one scenario's row of a results file
// (bench/results/*.json). bench/run.js decides a run's `met` with it, and bench/median.js judges a
// target on the median of several full runs with the same figures.

/** The SSE first-token p99 at 50 clients may be at most this many times the bare server's p99, same run. */
export const SSE_FIRST_TOKEN_P99_FACTOR = 1.5;

/**
 * @typedef {{ name: string, ratio?: number | null, target?: number | null, rssPeakMb?: number,
 *   metrics?: any }} ResultRow
 * @typedef {{ figure: number | null, limit: number, atMost: boolean, unit: string, text: string }} Judgement
 *   `figure` is null when the run did not finish what the target counts (then it is not met).
 */

/**
 * The figure a row's target is judged on, its limit and direction; null when the row has no target
 * on this database (issue 8 sets only execute's on PostgreSQL, the others on SQLite).
 * @param {ResultRow} row
 * @param {string} dialect 'sqlite' | 'postgres'
 * @returns {Judgement | null}
 */
export function judgement(row, dialect) {
  const m = row.metrics;
  if (typeof row.target === 'number' && row.target > 0) {
    return { figure: row.ratio ?? null, limit: row.target, atMost: false, unit: 'x', text: `>= ${row.target}` };
  }
  if (dialect !== 'sqlite' || !m) return null;
  switch (row.name) {
    case 'sse-stream': {
      const own = m.firstTokenMs?.p99;
      const bare = m.bareServer?.p99;
      return {
        figure: typeof own === 'number' && typeof bare === 'number' && bare > 0 ? Math.round((own / bare) * 100) / 100 : null,
        limit: SSE_FIRST_TOKEN_P99_FACTOR,
        atMost: true,
        unit: 'x bare',
        text: `first token p99 <= ${SSE_FIRST_TOKEN_P99_FACTOR}x bare`,
      };
    }
    case 'idle-sse-10k':
      return {
        figure: m.opened === m.streams ? (row.rssPeakMb ?? m.rssPeakMb ?? null) : null,
        limit: 1024,
        atMost: true,
        unit: 'MB',
        text: 'RSS <= 1024 MB',
      };
    case 'dispatcher-10k':
      return { figure: m.completed === m.tasks ? m.allDoneSeconds : null, limit: 20, atMost: true, unit: 's', text: 'all done <= 20 s' };
    default:
      return null;
  }
}

/**
 * The server's CPU time per request in µs, to 0.1 µs (the bare server's is ~15 µs: whole µs would
 * round off several percent of it); null when the CPU time or the requests are unknown.
 * @param {number | null} cpuSeconds
 * @param {number | null} requests
 */
export function serverUsPerRequest(cpuSeconds, requests) {
  if (cpuSeconds === null || cpuSeconds === undefined || !requests) return null;
  return Math.round((cpuSeconds / requests) * 1e7) / 10;
}

/**
 * Whether a figure meets its judgement.
 * @param {number | null} figure
 * @param {{ limit: number, atMost: boolean }} j
 */
export function meets(figure, j) {
  if (figure === null || !Number.isFinite(figure)) return false;
  return j.atMost ? figure <= j.limit : figure >= j.limit;
}

/**
 * The median of the figures of several runs; a run whose figure is null (it did not finish what the
 * target counts) ranks as the worst. Null when fewer than one figure is known.
 * @param {(number | null)[]} figures
 * @param {boolean} atMost
 * @returns {number | null}
 */
export function median(figures, atMost) {
  if (!figures.length) return null;
  const worst = atMost ? Infinity : -Infinity;
  const sorted = figures.map((f) => (f === null ? worst : f)).sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const value = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return Number.isFinite(value) ? value : null;
}
