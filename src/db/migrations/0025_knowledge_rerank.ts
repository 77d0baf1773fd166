import type { Kysely } from 'kysely';

/** The model that re-ranks a knowledge base's search candidates (docs/knowledge.md, "Re-ranking"); null: none. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('knowledge_bases').addColumn('rerank_model', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('knowledge_bases').dropColumn('rerank_model').execute();
}
