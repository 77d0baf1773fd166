import type { Kysely } from 'kysely';

/**
 * Tokens knowledge spent with a provider (docs/knowledge.md, "Usage"): embedding a document's chunks,
 * embedding a search's query, re-ranking. One row per call site's spend, by model and kind, with the
 * run whose knowledge_search spent it; read per day by GET /api/v1/knowledge-usage.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('knowledge_usage')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('knowledge_base_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('document_id', 'varchar(36)')
    .addColumn('run_id', 'varchar(36)')
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('model', 'varchar(200)', (c) => c.notNull())
    .addColumn('input_tokens', 'integer', (c) => c.notNull())
    .addColumn('output_tokens', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('knowledge_usage_tenant_created').on('knowledge_usage').columns(['tenant_id', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('knowledge_usage').execute();
}
