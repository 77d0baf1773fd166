/** Figures of a run as a person reads them: durations, money, token counts and dates in the browser's locale. */

/** 840 ms, 2.35 s, 1 min 5 s. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return seconds ? `${minutes} min ${seconds} s` : `${minutes} min`;
}

/** US dollars: cents for sums of a cent or more, else as many decimals as a model call's fraction of a cent needs (up to six). */
export function formatUsd(usd: number | null | undefined): string {
  if (usd === null || usd === undefined) return '—';
  const small = usd !== 0 && Math.abs(usd) < 0.01;
  return new Intl.NumberFormat(undefined, {
    style: 'currency',
    currency: 'USD',
    minimumFractionDigits: 2,
    maximumFractionDigits: small ? 6 : 2,
  }).format(usd);
}

export const formatCount = (n: number) => new Intl.NumberFormat().format(n);

export const formatTokens = (usage: { inputTokens: number; outputTokens: number }) =>
  `${formatCount(usage.inputTokens)} in / ${formatCount(usage.outputTokens)} out tokens`;

export const formatDate = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** How far `iso` is from `now` in words: "in 5 minutes", "in 1 hour" (not "in 60 minutes" a second early), "3 hours ago". */
export function inWords(iso: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  // Each unit once the smaller one, rounded, would reach it.
  if (Math.abs(Math.round(seconds / 3600)) >= 24) return format.format(Math.round(seconds / 86_400), 'day');
  if (Math.abs(Math.round(seconds / 60)) >= 60) return format.format(Math.round(seconds / 3600), 'hour');
  if (Math.abs(seconds) >= 60) return format.format(Math.round(seconds / 60), 'minute');
  return format.format(seconds, 'second');
}
