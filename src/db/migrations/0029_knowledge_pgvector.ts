import { type Kysely, PostgresAdapter, sql } from 'kysely';

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * Vector search through pgvector (docs/knowledge.md, "Vector"). This migration once created the
 * extension, the chunks' `vector` column, their vectors and HNSW indexes; that is now the knowledge
 * domain's pgvector upkeep (knowledge/pgvector.ts), run at every start once the server listens, so an
 * extension installed later and chunks an older server wrote are taken up too. A migration may not
 * reach a domain's store (the dependency rules), and one way of doing it is kept: `up` does nothing.
 */
export async function up(): Promise<void> {}

/** Drops the chunks' `vector` column and its indexes (the next start's upkeep makes them again where the extension is). */
export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  const column = await sql`select 1 from information_schema.columns
    where table_schema = current_schema() and table_name = 'knowledge_chunks' and column_name = 'embedding_vector'`.execute(db);
  // Dropping the column drops its indexes; the extension stays (other tables may use it).
  if (column.rows.length) await sql`alter table knowledge_chunks drop column embedding_vector`.execute(db);
}
