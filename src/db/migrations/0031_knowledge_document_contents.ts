import { type Kysely, PostgresAdapter, sql } from 'kysely';

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * A document's bytes move out of its row into `knowledge_document_contents`, one row per document (the
 * bytes of its current version). Its row is its ingestion job, updated at each step (claimed, progress,
 * lease, failed, ready), and SQLite rewrites a row's whole record when its size changes: the bytes in
 * it were written again by each such update (a 5 MiB document, about 20 MiB per ingestion).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('knowledge_document_contents')
    .addColumn('document_id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('knowledge_base_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('content', isPostgres(db) ? 'bytea' : 'blob', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('knowledge_document_contents_base')
    .on('knowledge_document_contents')
    .columns(['tenant_id', 'knowledge_base_id'])
    .execute();
  await sql`insert into knowledge_document_contents (document_id, tenant_id, knowledge_base_id, version, content)
    select id, tenant_id, knowledge_base_id, version, content from knowledge_documents`.execute(db);
  await db.schema.alterTable('knowledge_documents').dropColumn('content').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const pg = isPostgres(db);
  await db.schema
    .alterTable('knowledge_documents')
    .addColumn('content', pg ? 'bytea' : 'blob', (c) => c.notNull().defaultTo(pg ? sql`'\\x'::bytea` : sql`x''`))
    .execute();
  await sql`update knowledge_documents set content = (
    select c.content from knowledge_document_contents c where c.document_id = knowledge_documents.id)
    where exists (select 1 from knowledge_document_contents c where c.document_id = knowledge_documents.id)`.execute(db);
  await db.schema.dropTable('knowledge_document_contents').execute();
}
