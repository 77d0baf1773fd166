import { type Kysely, PostgresAdapter, sql } from 'kysely';

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * PostgreSQL's lexical ranking weighs each word by its document frequency among the base's chunks
 * (docs/knowledge.md, "How ranking works"), which it counted per query over the GIN index: about a
 * second of the database for a question of common words at 100,000 chunks (docs/benchmarks.md,
 * "Knowledge: scale"). `knowledge_terms` keeps, per base, each lexeme of the chunks' tsvectors with the
 * number of chunks holding it, and under the empty term (no lexeme is empty) the number of chunks of
 * the base; ingestion keeps it in the transaction that swaps a document's chunks. Filled here from the
 * chunks there are. SQLite: nothing (FTS5 keeps its own frequencies for bm25).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await db.schema
    .createTable('knowledge_terms')
    .addColumn('knowledge_base_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('term', 'text', (c) => c.notNull())
    .addColumn('chunks', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('knowledge_terms_pkey', ['knowledge_base_id', 'term'])
    .execute();
  await sql`insert into knowledge_terms (knowledge_base_id, term, chunks)
    select c.knowledge_base_id, t.lexeme, count(*) from knowledge_chunks c cross join lateral unnest(c.tsv) as t
    group by c.knowledge_base_id, t.lexeme`.execute(db);
  await sql`insert into knowledge_terms (knowledge_base_id, term, chunks)
    select knowledge_base_id, '', count(*) from knowledge_chunks group by knowledge_base_id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) await db.schema.dropTable('knowledge_terms').execute();
}
