import { type Kysely, PostgresAdapter, sql } from 'kysely';

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * SQLite's full-text index of knowledge chunks gains each chunk's base as a second column, so a
 * lexical search matches the base's postings with the words' inside FTS5 instead of joining every
 * matching chunk's row to check its base (docs/benchmarks.md, "Knowledge: scale": the join was most of
 * a search's time). Contentless: the text stays in knowledge_chunks alone; the index holds what search
 * needs, and contentless_delete lets the delete trigger remove a row by its rowid. PostgreSQL: nothing
 * (its tsvector index is on the chunks' own rows).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  await sql`drop trigger knowledge_chunks_fts_insert`.execute(db);
  await sql`drop trigger knowledge_chunks_fts_delete`.execute(db);
  await sql`drop table knowledge_chunks_fts`.execute(db);
  await sql`create virtual table knowledge_chunks_fts using fts5(text, base, content='', contentless_delete=1, tokenize='porter unicode61')`.execute(
    db,
  );
  // The base as one token: the id without its hyphens, ending in a digit so the porter stemmer leaves it whole.
  await sql`insert into knowledge_chunks_fts (rowid, text, base)
    select seq, text, replace(knowledge_base_id, '-', '') || '0' from knowledge_chunks`.execute(db);
  await sql`create trigger knowledge_chunks_fts_insert after insert on knowledge_chunks begin
      insert into knowledge_chunks_fts (rowid, text, base) values (new.seq, new.text, replace(new.knowledge_base_id, '-', '') || '0');
    end`.execute(db);
  await sql`create trigger knowledge_chunks_fts_delete after delete on knowledge_chunks begin
      delete from knowledge_chunks_fts where rowid = old.seq;
    end`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) return;
  await sql`drop trigger knowledge_chunks_fts_insert`.execute(db);
  await sql`drop trigger knowledge_chunks_fts_delete`.execute(db);
  await sql`drop table knowledge_chunks_fts`.execute(db);
  await sql`create virtual table knowledge_chunks_fts using fts5(text, content='knowledge_chunks', content_rowid='seq', tokenize='porter unicode61')`.execute(
    db,
  );
  await sql`insert into knowledge_chunks_fts (knowledge_chunks_fts) values ('rebuild')`.execute(db);
  await sql`create trigger knowledge_chunks_fts_insert after insert on knowledge_chunks begin
      insert into knowledge_chunks_fts (rowid, text) values (new.seq, new.text);
    end`.execute(db);
  await sql`create trigger knowledge_chunks_fts_delete after delete on knowledge_chunks begin
      insert into knowledge_chunks_fts (knowledge_chunks_fts, rowid, text) values ('delete', old.seq, old.text);
    end`.execute(db);
}
