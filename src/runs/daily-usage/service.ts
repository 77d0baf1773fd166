import type { Db } from '../../db/database.js';
import { type ReportPeriodQuery, reportPeriod } from '../../report-period.js';
import { type DailyUsageRow, dailyUsage } from './store.js';

/** Cost, tokens and runs per day, agent, model and status (the console's usage page; docs/operations.md). */
export class DailyUsageReport {
  constructor(private readonly db: Db) {}

  async report(tenantId: string, query: ReportPeriodQuery): Promise<{ from: string; to: string; rows: DailyUsageRow[] }> {
    const { from, to, start, end } = reportPeriod(query);
    const rows = await dailyUsage(this.db.kysely, tenantId, start, end);
    return { from, to, rows };
  }
}
