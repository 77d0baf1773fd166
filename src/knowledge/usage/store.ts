import type { Insertable, Kysely } from 'kysely';
import { sql } from 'kysely';
import { exportPages } from '../../db/export-pages.js';
import type { Database, KnowledgeUsageTable } from '../../db/schema.js';

/** SQL of knowledge's token usage (the knowledge_usage table, migration 0028). */

export type NewUsage = Insertable<KnowledgeUsageTable>;

export async function insertUsage(db: Kysely<Database>, row: NewUsage): Promise<void> {
  await db.insertInto('knowledge_usage').values(row).execute();
}

/** What spent the tokens: a document's ingestion, a search's query, a re-ranking. */
export type UsageKind = 'ingestion' | 'query' | 'rerank';

export interface KnowledgeUsageRow {
  day: string;
  knowledgeBaseId: string;
  kind: UsageKind;
  model: string;
  calls: number;
  inputTokens: number;
  outputTokens: number;
}

/**
 * The tenant's knowledge tokens spent in [from, to) (of one run when `runId` is given) summed per day,
 * base, kind and model. created_at is fixed-width ISO-8601 UTC text: its first ten characters are the day.
 */
export async function dailyKnowledgeUsage(
  db: Kysely<Database>,
  scope: { tenantId: string; from: string; to: string; runId?: string },
): Promise<KnowledgeUsageRow[]> {
  const day = sql<string>`substr(created_at, 1, 10)`;
  let query = db
    .selectFrom('knowledge_usage')
    .where('tenant_id', '=', scope.tenantId)
    .where('created_at', '>=', scope.from)
    .where('created_at', '<', scope.to);
  if (scope.runId !== undefined) query = query.where('run_id', '=', scope.runId);
  const rows = await query
    .select([
      day.as('day'),
      'knowledge_base_id',
      'kind',
      'model',
      (eb) => eb.fn.countAll().as('calls'),
      (eb) => eb.fn.sum<number | string>('input_tokens').as('input_tokens'),
      (eb) => eb.fn.sum<number | string>('output_tokens').as('output_tokens'),
    ])
    .groupBy([day, 'knowledge_base_id', 'kind', 'model'])
    .orderBy(day)
    .orderBy('knowledge_base_id')
    .orderBy('kind')
    .orderBy('model')
    .execute();
  // PostgreSQL answers count and sum of integers as text (bigint, numeric).
  return rows.map((r) => ({
    day: r.day,
    knowledgeBaseId: r.knowledge_base_id,
    kind: r.kind as UsageKind,
    model: r.model,
    calls: Number(r.calls),
    inputTokens: Number(r.input_tokens ?? 0),
    outputTokens: Number(r.output_tokens ?? 0),
  }));
}

/**
 * The retention sweep's batch: up to `limit` of the tenant's rows recorded before `cutoff`, read through
 * knowledge_usage_tenant_created; how many were deleted.
 */
export async function deleteUsageBefore(db: Kysely<Database>, tenantId: string, cutoff: string, limit: number): Promise<number> {
  const r = await db
    .deleteFrom('knowledge_usage')
    .where('id', 'in', (eb) =>
      eb.selectFrom('knowledge_usage').select('id').where('tenant_id', '=', tenantId).where('created_at', '<', cutoff).limit(limit),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * `agentry export` (export/tenant.ts): the tenant's usage rows, a page at a time. Recorded, not derived
 * (the tokens were spent once, with a provider): they travel with the tenant and are imported as they are.
 */
export function exportSources(db: Kysely<Database>, tenantId: string) {
  return exportPages(db, tenantId, [{ table: 'knowledge_usage', keys: ['id'] }]);
}
