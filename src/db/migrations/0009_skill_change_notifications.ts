import { type Kysely, PostgresAdapter } from 'kysely';
import { notifyOnChange, stopNotifyingOnChange } from './0007_change_notifications.js';

/**
 * Skills and assignments join the tables whose reads are cached (a run's system prompt names the
 * agent's usable skills, read from memory): on PostgreSQL their writes NOTIFY `agentry_changes`
 * like those of 0007's tables, through the same trigger function.
 */
export const CACHED_TABLES = ['skills', 'skill_assignments'] as const;

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) await notifyOnChange(db, CACHED_TABLES);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (isPostgres(db)) await stopNotifyingOnChange(db, CACHED_TABLES);
}
