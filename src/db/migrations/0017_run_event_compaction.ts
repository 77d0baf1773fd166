import { type Kysely, sql } from 'kysely';

/**
 * Retention (docs/operations.md, "Retention"): a finished run's events are compacted after a grace
 * period, down to its terminal event; the run row keeps its output, tool calls, steps and cost.
 * `events_compacted_at` marks the runs done, so the sweep never reads them again, and the partial
 * index holds only the ended runs still to compact (a run enters it when it ends, leaves when compacted).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('runs').addColumn('events_compacted_at', 'varchar(24)').execute();
  await sql`create index runs_to_compact on runs (tenant_id, completed_at) where completed_at is not null and events_compacted_at is null`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('runs_to_compact').execute();
  await db.schema.alterTable('runs').dropColumn('events_compacted_at').execute();
}
