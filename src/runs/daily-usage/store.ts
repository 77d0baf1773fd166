import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';

/** SQL of the usage report: runs counted and summed per day (UTC), agent, model and status. */

export interface DailyUsageRow {
  day: string;
  agentId: string;
  model: string;
  status: string;
  runs: number;
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
}

/**
 * The tenant's runs created in [from, to) grouped by day, agent, model and status. created_at is
 * fixed-width ISO-8601 UTC text, so its first ten characters are the day on both databases, and the
 * range is read through runs_tenant_created.
 */
export async function dailyUsage(db: Kysely<Database>, tenantId: string, from: string, to: string): Promise<DailyUsageRow[]> {
  const day = sql<string>`substr(created_at, 1, 10)`;
  const rows = await db
    .selectFrom('runs')
    .where('tenant_id', '=', tenantId)
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .select([
      day.as('day'),
      'agent_id',
      'model',
      'status',
      (eb) => eb.fn.countAll().as('runs'),
      (eb) => eb.fn.sum<number | string>('cost').as('cost'),
      (eb) => eb.fn.sum<number | string>('input_tokens').as('input_tokens'),
      (eb) => eb.fn.sum<number | string>('output_tokens').as('output_tokens'),
    ])
    .groupBy([day, 'agent_id', 'model', 'status'])
    .orderBy(day)
    .orderBy('agent_id')
    .execute();
  // PostgreSQL answers count and sum of integers as text (bigint, numeric).
  return rows.map((r) => ({
    day: r.day,
    agentId: r.agent_id,
    model: r.model,
    status: r.status,
    runs: Number(r.runs),
    costUsd: Number(r.cost ?? 0),
    inputTokens: Number(r.input_tokens ?? 0),
    outputTokens: Number(r.output_tokens ?? 0),
  }));
}
