import { InvalidInput } from './errors.js';
import { now } from './ids.js';

/**
 * The days a usage report covers (runs' daily usage, knowledge's tokens): `from` and `to` as asked
 * (YYYY-MM-DD, UTC, both included; by default the last 30 days up to today), and the instants that
 * bound them for a query on `created_at`-style ISO strings.
 */

/** The longest period one report covers: a year (a leap year's days). */
export const MAX_REPORT_DAYS = 366;
const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

export interface ReportPeriodQuery {
  /** First day, YYYY-MM-DD (UTC); default: 29 days before `to`. */
  from?: string;
  /** Last day, YYYY-MM-DD (UTC), included; default: today. */
  to?: string;
}

export interface ReportPeriod {
  from: string;
  to: string;
  /** The first instant of `from`. */
  start: string;
  /** The first instant after `to`. */
  end: string;
}

export function reportPeriod(query: ReportPeriodQuery): ReportPeriod {
  const to = query.to ?? now().slice(0, 10);
  const toMs = Date.parse(`${to}T00:00:00.000Z`);
  const from = query.from ?? new Date(toMs - (DEFAULT_DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
  const fromMs = Date.parse(`${from}T00:00:00.000Z`);
  if (Number.isNaN(toMs)) throw new InvalidInput('to is not a date', [{ path: 'to', message: 'must be a date, YYYY-MM-DD' }]);
  if (Number.isNaN(fromMs)) throw new InvalidInput('from is not a date', [{ path: 'from', message: 'must be a date, YYYY-MM-DD' }]);
  if (fromMs > toMs) throw new InvalidInput('from is after to', [{ path: 'from', message: 'must be on or before to' }]);
  if ((toMs - fromMs) / DAY_MS + 1 > MAX_REPORT_DAYS)
    throw new InvalidInput(`at most ${MAX_REPORT_DAYS} days per report`, [
      { path: 'from', message: `must be at most ${MAX_REPORT_DAYS} days before to` },
    ]);
  return { from, to, start: new Date(fromMs).toISOString(), end: new Date(toMs + DAY_MS).toISOString() };
}
