import type { Agentry } from '@agentry/client';

/** One row of GET /api/v1/usage/daily: the runs of one day (UTC), agent, model and status. */
export type UsageRow = Awaited<ReturnType<Agentry['usage']['daily']>>['rows'][number];

/** Every day from `from` to `to` (YYYY-MM-DD, UTC), both included. */
function daysBetween(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/** Chart data: one object per day (days without runs at 0), one key per series `keyOf` names. */
export function seriesBy(rows: UsageRow[], from: string, to: string, keyOf: (row: UsageRow) => string, measure: (row: UsageRow) => number) {
  const keys = [...new Set(rows.map(keyOf))].sort();
  const byDay = new Map(daysBetween(from, to).map((day) => [day, Object.fromEntries([['day', day], ...keys.map((k) => [k, 0])])]));
  for (const row of rows) {
    const point = byDay.get(row.day);
    if (point) point[keyOf(row)] = (point[keyOf(row)] as number) + measure(row);
  }
  return { keys, data: [...byDay.values()] as Record<string, string | number>[] };
}

export function totalsOf(rows: UsageRow[]) {
  const byStatus: Record<string, number> = {};
  let costUsd = 0;
  let inputTokens = 0;
  let outputTokens = 0;
  let runs = 0;
  for (const row of rows) {
    costUsd += row.costUsd;
    inputTokens += row.inputTokens;
    outputTokens += row.outputTokens;
    runs += row.runs;
    byStatus[row.status] = (byStatus[row.status] ?? 0) + row.runs;
  }
  return { costUsd, inputTokens, outputTokens, runs, byStatus };
}
