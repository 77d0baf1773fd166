import type { Kysely } from 'kysely';

/**
 * A run's worst-case cost, reserved against its budgets when it is admitted (docs/operations.md,
 * "Limits and budgets"). It counts while the run is active and its cost once it has ended, so the
 * reservation lives and dies with the run's row: an end, a cancel or recovery's `interrupted`
 * settles it, whichever process writes it. 0 for runs written before this column.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('runs')
    .addColumn('reserved_usd', 'double precision', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('runs').dropColumn('reserved_usd').execute();
}
