import type { Db } from '../../db/database.js';
import { InvalidInput } from '../../errors.js';
import { now } from '../../ids.js';
import { type DailyUsageRow, dailyUsage } from './store.js';

/** The longest period one report covers: a year (a leap year's days). */
export const MAX_REPORT_DAYS = 366;
const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

export interface DailyUsageQuery {
  /** First day, YYYY-MM-DD (UTC); default: 29 days before `to`. */
  from?: string;
  /** Last day, YYYY-MM-DD (UTC), included; default: today. */
  to?: string;
}

/** Cost, tokens and runs per day, agent, model and status (the console's usage page; docs/operations.md). */
export class DailyUsageReport {
  constructor(private readonly db: Db) {}

  async report(tenantId: string, query: DailyUsageQuery): Promise<{ from: string; to: string; rows: DailyUsageRow[] }> {
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
    const end = new Date(toMs + DAY_MS).toISOString();
    const rows = await dailyUsage(this.db.kysely, tenantId, new Date(fromMs).toISOString(), end);
    return { from, to, rows };
  }
}
