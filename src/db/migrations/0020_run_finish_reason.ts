import type { Kysely } from 'kysely';

/**
 * Why a run's model stopped (`finish_reason`: stop, length, content-filter, max_steps...; null when no
 * step answered) and whether older history was left out of its prompt unsummarised
 * (`context_truncated`), so neither a cut-off answer nor lost context passes as a normal end.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('runs').addColumn('finish_reason', 'varchar(32)').execute();
  await db.schema
    .alterTable('runs')
    .addColumn('context_truncated', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('runs').dropColumn('context_truncated').execute();
  await db.schema.alterTable('runs').dropColumn('finish_reason').execute();
}
