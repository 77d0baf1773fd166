// Summaries of measured values, shared by the bench scripts.

const round = (n, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** p50/p99/max of a list of numbers (ms), rounded to 0.1. */
export function percentiles(values) {
  if (!values.length) return { p50: null, p99: null, max: null };
  const s = [...values].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(s.length * q))];
  return { p50: round(at(0.5)), p99: round(at(0.99)), max: round(s[s.length - 1]) };
}
