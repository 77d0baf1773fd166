import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('rate_limit_per_minute', 'integer').execute();
  await db.schema.alterTable('agents').addColumn('monthly_budget_usd', 'double precision').execute();
  // Month-to-date spend sums per tenant and per agent.
  await db.schema.createIndex('runs_tenant_created').on('runs').columns(['tenant_id', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('runs_tenant_created').execute();
  await db.schema.alterTable('agents').dropColumn('monthly_budget_usd').execute();
  await db.schema.alterTable('api_keys').dropColumn('rate_limit_per_minute').execute();
}
