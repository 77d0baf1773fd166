import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Tables whose reads are cached in memory (db/changes.ts). On PostgreSQL, a statement trigger on
 * each NOTIFYs `agentry_changes` with the table's name when a writing transaction commits, whoever
 * wrote (a replica, the CLI, an operator's SQL), so every replica drops what it cached.
 * SQLite needs no schema for this: other processes' commits show in `PRAGMA data_version`.
 */
export const CACHED_TABLES = ['tenants', 'api_keys', 'agents'] as const;

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await sql`
    create or replace function agentry_notify_change() returns trigger language plpgsql as $$
    begin
      perform pg_notify('agentry_changes', tg_table_name);
      return null;
    end $$`.execute(db);
  await notifyOnChange(db, CACHED_TABLES);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (!isPostgres(db)) return;
  await stopNotifyingOnChange(db, CACHED_TABLES);
  await sql`drop function if exists agentry_notify_change()`.execute(db);
}

/** Statement triggers that NOTIFY the table's name on every write (later migrations add tables). */
export async function notifyOnChange(db: Kysely<unknown>, tables: readonly string[]): Promise<void> {
  for (const table of tables) {
    await sql`
      create trigger ${sql.id(`${table}_changed`)}
      after insert or update or delete or truncate on ${sql.table(table)}
      for each statement execute function agentry_notify_change()`.execute(db);
  }
}

export async function stopNotifyingOnChange(db: Kysely<unknown>, tables: readonly string[]): Promise<void> {
  for (const table of tables) await sql`drop trigger if exists ${sql.id(`${table}_changed`)} on ${sql.table(table)}`.execute(db);
}
