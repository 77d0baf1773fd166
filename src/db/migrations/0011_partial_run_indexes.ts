import { type Kysely, sql } from 'kysely';

/**
 * Two indexes of `runs` hold only the rows their queries look for, so most runs never enter them:
 *
 * - `runs_status_lease` (status, lease_expires_at) served the recovery of running runs whose lease
 *   expired (runs/store.ts expiredRuns) and could serve the count of a tenant's running runs; both ask
 *   for status = 'running' only. As `runs_running_lease` it holds running runs alone: a run that ends
 *   leaves it.
 * - `runs_tenant_task` serves the listing of a task's runs; runs that are not a task's (task_id null)
 *   stay out.
 *
 * Every index is one more B-tree insert per run; these were two of the runs table's six.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('runs_status_lease').execute();
  await sql`create index runs_running_lease on runs (lease_expires_at) where status = 'running'`.execute(db);
  await db.schema.dropIndex('runs_tenant_task').execute();
  await sql`create index runs_tenant_task on runs (tenant_id, task_id, id) where task_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('runs_running_lease').execute();
  await db.schema.createIndex('runs_status_lease').on('runs').columns(['status', 'lease_expires_at']).execute();
  await db.schema.dropIndex('runs_tenant_task').execute();
  await db.schema.createIndex('runs_tenant_task').on('runs').columns(['tenant_id', 'task_id', 'id']).execute();
}
