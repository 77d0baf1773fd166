import { type Kysely, sql } from 'kysely';

/**
 * The dispatcher takes the next job by priority, then earliest deadline (jobs without one last), then
 * age. `due_at asc nulls last` cannot walk the 0005 index (nulls sort first in it), so every claim
 * sorted all queued jobs: ~100 µs per claim with 2,000 queued on SQLite, growing with the queue.
 * This index holds the order itself; the claim query orders by the same expression
 * (tasks/store/jobs.ts nextCandidates, whose literal must stay equal to this one).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('task_jobs_claim').execute();
  await sql`create index task_jobs_claim on task_jobs (state, priority_rank desc, (coalesce(due_at, '9999-12-31T23:59:59.999Z')), id)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('task_jobs_claim').execute();
  await db.schema.createIndex('task_jobs_claim').on('task_jobs').columns(['state', 'priority_rank', 'due_at', 'id']).execute();
}
