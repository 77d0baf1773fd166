import type { Kysely } from 'kysely';

/**
 * Trace context kept with work that outlives the request which began it (docs/operations.md, "Traces"):
 * a task job's `traceparent` names the fire (or request) that queued it, which the job's span links
 * to when a dispatcher picks it up, possibly on another replica; a run's names the span it was started
 * in, so work continuing the run elsewhere stays in its trace. Null when tracing is off.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // 55 characters: version, trace id, span id and flags of a W3C traceparent.
  await db.schema.alterTable('task_jobs').addColumn('traceparent', 'varchar(55)').execute();
  await db.schema.alterTable('runs').addColumn('traceparent', 'varchar(55)').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('runs').dropColumn('traceparent').execute();
  await db.schema.alterTable('task_jobs').dropColumn('traceparent').execute();
}
