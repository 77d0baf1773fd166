// How each target of the benchmark is judged, from one scenario's row of a results file
// (bench/results/*.json). bench/run.js decides a run's `met` with it, and bench/median.js judges a
// target on the median of several full runs with the same figures.
//
// Issue 35: the API targets are limits on the server's CPU time per request as a multiple of the bare
// server's (bench/baseline.js) measured the same way in the same run; ratios of throughput to the bare
// server, judged before, moved with the machine's hour more than with the code.

/**
 * At most this many times the bare server's CPU time per request, by database and scenario (the SSE
 * stream: per stream). Only execute has one on PostgreSQL; the other targets are SQLite's.
 * @type {Record<string, Record<string, number>>}
 */
export const CPU_LIMITS = {
  sqlite: { 'get-agent': 2.5, 'list-agents': 3, authorize: 4, 'token-exchange': 40, execute: 25, 'sse-stream': 28 },
  postgres: { execute: 30 },
};
/**
 * Issue 36, real-model work: at most this many times echo execute's CPU time per request in the same
 * run, by database and scenario.
 * @type {Record<string, Record<string, number>>}
 */
export const EXECUTE_LIMITS = {
  sqlite: {
    'execute-openai-compatible': 2,
    'execute-openai': 2.5,
    'execute-anthropic': 2.5,
    'execute-tracing': 1.25,
    'long-conversation': 1.5,
    'long-conversation-window': 2,
  },
  postgres: { 'execute-openai-compatible': 2.5 },
};
/** sse-stream-openai-compatible: at most this many times execute-openai-compatible's CPU per request (SQLite). */
export const PROVIDER_SSE_LIMIT = 1.2;
/** latency-openai-compatible: execute's p50 with one connection at most this many ms above the mock's own (SQLite). */
export const PROVIDER_LATENCY_MS = 2;
/** idle-sse-10k: the server's peak RSS while 10,000 streams are held, at most (SQLite). */
export const IDLE_STREAMS_RSS_MB = 1024;
/** dispatcher-10k: seconds until all 10,000 tasks are done, at most (SQLite). */
export const DISPATCHER_SECONDS = 20;

/**
 * @typedef {{ name: string, serverUsPerRequest?: number | null, rssPeakMb?: number, metrics?: any }} ResultRow
 * @typedef {{ start?: number | null, end?: number | null, samplesBeforeEachScenario?: (number | null)[] }} BareMeasurements
 *   the bare server's CPU µs per request as measured in a run: at its start, before each scenario, at its end
 * @typedef {{ scenarios: ResultRow[], baseline?: { serverUsPerRequest?: BareMeasurements } }} ResultRun
 * @typedef {{ bareUs: number | null, executeUs: number | null, providerExecuteUs?: number | null }} Reference
 *   the bare server's CPU µs per request in the run (bareUsOf) and echo execute's, the two yardsticks
 *   of a row's CPU per request; execute-openai-compatible's, the yardstick of its SSE variant
 * @typedef {{ figure: number | null, limit: number, unit: string, what: string, limitText: string, text: string }} Judgement
 *   every target is an upper limit on `what` ('<= 2.5x bare': `limitText`; `text`: both); `figure` is
 *   null when the run did not measure or finish what the target counts (then it is not met).
 */

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
 * The bare server's CPU µs per request that a run's rows are divided by: the median of all its
 * measurements in the run, so that one of them disturbed by other load moves it little.
 * @param {BareMeasurements} measured
 * @returns {number | null}
 */
export function bareUsOf(measured) {
  const us = [measured.start, ...(measured.samplesBeforeEachScenario ?? []), measured.end].filter((n) => typeof n === 'number' && n > 0);
  const m = median(us);
  return m === null ? null : Math.round(m * 10) / 10;
}

/**
 * A run's yardsticks. Results written before the bare server's figures had a field of their own hold
 * them in the two baseline rows only (whole µs).
 * @param {ResultRun} run
 * @returns {Reference}
 */
export function reference(run) {
  const row = (/** @type {string} */ name) => run.scenarios.find((r) => r.name === name)?.serverUsPerRequest ?? null;
  const measured = run.baseline?.serverUsPerRequest ?? { start: row('baseline (start)'), end: row('baseline (end)') };
  return { bareUs: bareUsOf(measured), executeUs: row('execute'), providerExecuteUs: row('execute-openai-compatible') };
}

/** `us` as a multiple of `of`, to 0.01; null when either is unknown. */
function multiple(/** @type {number | null | undefined} */ us, /** @type {number | null} */ of) {
  return typeof us === 'number' && typeof of === 'number' && of > 0 ? Math.round((us / of) * 100) / 100 : null;
}

/**
 * A row's CPU per request as a multiple of the bare server's and of echo execute's, same run (the
 * latter is what issue 36 judges the execute variants by; null for execute itself and the baselines).
 * @param {ResultRow} row
 * @param {Reference} ref
 */
export function cpuMultiples(row, ref) {
  const own = row.name === 'execute' || row.name.startsWith('baseline');
  return { bare: multiple(row.serverUsPerRequest, ref.bareUs), execute: own ? null : multiple(row.serverUsPerRequest, ref.executeUs) };
}

/**
 * The figure a row's target is judged on and its limit; null when the row has no target on this
 * database.
 * @param {ResultRow} row
 * @param {string} dialect 'sqlite' | 'postgres'
 * @param {Reference} ref
 * @returns {Judgement | null}
 */
export function judgement(row, dialect, ref) {
  const limit = CPU_LIMITS[dialect]?.[row.name];
  if (limit !== undefined) return upTo(cpuMultiples(row, ref).bare, 'CPU/req', limit, 'x bare');
  const againstExecute = EXECUTE_LIMITS[dialect]?.[row.name];
  if (againstExecute !== undefined) return upTo(cpuMultiples(row, ref).execute, 'CPU/req', againstExecute, 'x exec');
  const m = row.metrics;
  if (dialect !== 'sqlite') return null;
  if (row.name === 'sse-stream-openai-compatible') {
    return upTo(multiple(row.serverUsPerRequest, ref.providerExecuteUs ?? null), 'CPU/stream', PROVIDER_SSE_LIMIT, 'x its execute');
  }
  if (!m) return null;
  switch (row.name) {
    case 'latency-openai-compatible':
      return upTo(m.p50AboveMockMs ?? null, 'p50 above the mock', PROVIDER_LATENCY_MS, 'ms');
    case 'idle-sse-10k':
      return upTo(m.opened === m.streams ? (row.rssPeakMb ?? m.rssPeakMb ?? null) : null, 'RSS', IDLE_STREAMS_RSS_MB, 'MB');
    case 'dispatcher-10k':
      return upTo(m.completed === m.tasks ? m.allDoneSeconds : null, 'all done', DISPATCHER_SECONDS, 's');
    default:
      return null;
  }
}

/** @returns {Judgement} */
function upTo(/** @type {number | null} */ figure, /** @type {string} */ what, /** @type {number} */ limit, /** @type {string} */ unit) {
  const limitText = `<= ${limit}${unit.startsWith('x ') ? unit : ` ${unit}`}`;
  return { figure, limit, unit, what, limitText, text: `${what} ${limitText}` };
}

/**
 * sse-stream's first-token p99 at 50 streams and the bare server's with the same clients, same run:
 * reported side by side, without a target (issue 35). Null for other rows.
 * @param {ResultRow} row
 * @returns {{ p99: number | null, bareP99: number | null } | null}
 */
export function firstTokenP99(row) {
  if (row.name !== 'sse-stream' || !row.metrics) return null;
  return { p99: row.metrics.firstTokenMs?.p99 ?? null, bareP99: row.metrics.bareServer?.p99 ?? null };
}

/**
 * Whether a figure is within its limit.
 * @param {number | null} figure
 * @param {{ limit: number }} j
 */
export function meets(figure, j) {
  if (figure === null || !Number.isFinite(figure)) return false;
  return figure <= j.limit;
}

/**
 * The median of the figures of several runs; a run whose figure is null (it did not measure or finish
 * what the target counts) ranks as the worst, above every limit. Null when there is no figure, or when
 * the median is such a run.
 * @param {(number | null)[]} figures
 * @returns {number | null}
 */
export function median(figures) {
  if (!figures.length) return null;
  const sorted = figures.map((f) => (f === null ? Infinity : f)).sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const value = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return Number.isFinite(value) ? value : null;
}
