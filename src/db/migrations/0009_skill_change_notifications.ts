import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Skills and assignments join the tables whose reads are cached (a run's system prompt names the
 * agent's usable skills, read from memory): on PostgreSQL their writes NOTIFY `agentry_changes`
 * like those of 0007's tables, through the same trigger function.
 */
export const CACHED_TABLES = ['skills', 'skill_assignments'] as const;

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  for (const table of CACHED_TABLES) {
    await sql`
      create trigger ${sql.id(`${table}_changed`)}
      after insert or update or delete or truncate on ${sql.table(table)}
      for each statement execute function agentry_notify_change()`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  for (const table of CACHED_TABLES) await sql`drop trigger if exists ${sql.id(`${table}_changed`)} on ${sql.table(table)}`.execute(db);
}
