import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Knowledge (docs/knowledge.md): a tenant's knowledge bases, their documents, and the documents'
 * chunks with their embeddings. A document row is also its ingestion job (status, lease, attempts):
 * any replica claims a queued document, or one whose lease lapsed with its process.
 *
 * Chunks carry an integer `seq` as their key: SQLite's FTS5 index refers to rows by an integer rowid,
 * and an implicit rowid may be renumbered by VACUUM, so the column is declared. The lexical index is
 * FTS5 on SQLite (external content, kept in step by triggers) and a generated `tsvector` with a GIN
 * index on PostgreSQL; both stem English (porter / the `english` configuration).
 */
const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = isPostgres(db);
  const bytes = pg ? 'bytea' : 'blob';

  await db.schema
    .createTable('knowledge_bases')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'varchar(200)', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('embedding_model', 'varchar(200)', (c) => c.notNull())
    .addColumn('chunk_max_chars', 'integer', (c) => c.notNull())
    .addColumn('chunk_overlap_chars', 'integer', (c) => c.notNull())
    .addColumn('document_count', 'integer', (c) => c.notNull())
    .addColumn('chunk_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('knowledge_bases_tenant_name').unique().on('knowledge_bases').columns(['tenant_id', 'name']).execute();

  await db.schema
    .createTable('knowledge_documents')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('knowledge_base_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('file_id', 'varchar(36)')
    .addColumn('filename', 'varchar(255)')
    .addColumn('title', 'varchar(500)')
    .addColumn('source_url', 'varchar(2048)')
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('media_type', 'varchar(200)', (c) => c.notNull())
    .addColumn('byte_size', 'integer', (c) => c.notNull())
    // The bytes of `version`, kept so that any replica can ingest it (and index it again).
    .addColumn('content', bytes, (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    // The version whose chunks search sees; null until one is ready.
    .addColumn('indexed_version', 'integer')
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('failure_reason', 'text')
    .addColumn('progress', 'integer', (c) => c.notNull())
    .addColumn('chunk_count', 'integer', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('available_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('lease_owner', 'varchar(64)')
    .addColumn('lease_expires_at', 'varchar(24)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('indexed_at', 'varchar(24)')
    .execute();
  await db.schema
    .createIndex('knowledge_documents_base')
    .on('knowledge_documents')
    .columns(['tenant_id', 'knowledge_base_id', 'id'])
    .execute();
  // The ingestion claim: queued documents by due time, and indexing ones by lease expiry.
  await db.schema.createIndex('knowledge_documents_claim').on('knowledge_documents').columns(['status', 'available_at']).execute();

  let chunks = db.schema.createTable('knowledge_chunks');
  chunks = pg
    ? chunks.addColumn('seq', 'bigserial', (c) => c.primaryKey())
    : chunks.addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement());
  chunks = chunks
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('knowledge_base_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('document_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('heading_path', 'text', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('char_count', 'integer', (c) => c.notNull())
    .addColumn('token_count', 'integer', (c) => c.notNull())
    .addColumn('embedding_model', 'varchar(200)', (c) => c.notNull())
    // float32 little-endian, L2-normalised.
    .addColumn('embedding', bytes, (c) => c.notNull());
  if (pg) chunks = chunks.addColumn('tsv', sql`tsvector`, (c) => c.generatedAlwaysAs(sql`to_tsvector('english', "text")`).stored());
  await chunks.execute();
  await db.schema.createIndex('knowledge_chunks_document').on('knowledge_chunks').columns(['document_id', 'version']).execute();
  await db.schema.createIndex('knowledge_chunks_base').on('knowledge_chunks').columns(['knowledge_base_id', 'seq']).execute();

  if (pg) {
    await sql`create index knowledge_chunks_tsv on knowledge_chunks using gin (tsv)`.execute(db);
  } else {
    await sql`create virtual table knowledge_chunks_fts using fts5(text, content='knowledge_chunks', content_rowid='seq', tokenize='porter unicode61')`.execute(
      db,
    );
    // Chunks are inserted and deleted, never updated: these two keep the index in step.
    await sql`create trigger knowledge_chunks_fts_insert after insert on knowledge_chunks begin
      insert into knowledge_chunks_fts (rowid, text) values (new.seq, new.text);
    end`.execute(db);
    await sql`create trigger knowledge_chunks_fts_delete after delete on knowledge_chunks begin
      insert into knowledge_chunks_fts (knowledge_chunks_fts, rowid, text) values ('delete', old.seq, old.text);
    end`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) {
    await sql`drop trigger if exists knowledge_chunks_fts_insert`.execute(db);
    await sql`drop trigger if exists knowledge_chunks_fts_delete`.execute(db);
    await sql`drop table if exists knowledge_chunks_fts`.execute(db);
  }
  await db.schema.dropTable('knowledge_chunks').execute();
  await db.schema.dropTable('knowledge_documents').execute();
  await db.schema.dropTable('knowledge_bases').execute();
}
