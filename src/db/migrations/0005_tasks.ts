import type { Kysely } from 'kysely';

/**
 * Tasks and the scheduler (docs/scheduling.md): tasks, the work queue the dispatcher claims with
 * leases, the record of every fire decision, and the key that encrypts webhook secrets.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tasks')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('app_id', 'varchar(128)', (c) => c.notNull())
    .addColumn('team_id', 'varchar(128)')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('type', 'varchar(16)', (c) => c.notNull())
    .addColumn('schedule', 'varchar(128)')
    .addColumn('timezone', 'varchar(64)')
    .addColumn('priority', 'varchar(16)', (c) => c.notNull())
    .addColumn('due_at', 'varchar(24)')
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('requires_approval', 'integer', (c) => c.notNull().defaultTo(0))
    // The status of the latest run (pending / awaiting_approval before any), kept here for filtering.
    .addColumn('status', 'varchar(24)', (c) => c.notNull())
    .addColumn('misfire_policy', 'varchar(16)', (c) => c.notNull())
    .addColumn('overlap_policy', 'varchar(16)', (c) => c.notNull())
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('backoff_seconds', 'integer', (c) => c.notNull())
    // Triggers: webhook (secret encrypted, see tasks/secrets.ts) or a platform event of another task.
    .addColumn('trigger_type', 'varchar(16)')
    .addColumn('trigger_event', 'varchar(32)')
    .addColumn('trigger_task_id', 'varchar(36)')
    .addColumn('webhook_secret', 'text')
    // Approval: who asked, what approving does (a registered action, or running the agent), who decided.
    .addColumn('approval_action', 'varchar(64)')
    .addColumn('approval_payload', 'text')
    .addColumn('requested_by_type', 'varchar(32)')
    .addColumn('requested_by_id', 'varchar(64)')
    .addColumn('decision', 'varchar(16)')
    .addColumn('decided_by_type', 'varchar(32)')
    .addColumn('decided_by_id', 'varchar(64)')
    .addColumn('decided_at', 'varchar(24)')
    // Scheduled tasks: the next cron fire time; each is claimed once by compare-and-set on this column.
    .addColumn('next_run_at', 'varchar(24)')
    .addColumn('last_run_id', 'varchar(36)')
    .addColumn('last_run_at', 'varchar(24)')
    .addColumn('last_error', 'text')
    .addColumn('created_by', 'varchar(64)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('deleted_at', 'varchar(24)')
    .execute();
  await db.schema.createIndex('tasks_tenant').on('tasks').columns(['tenant_id', 'id']).execute();
  await db.schema.createIndex('tasks_due_schedule').on('tasks').columns(['type', 'next_run_at']).execute();
  await db.schema.createIndex('tasks_trigger_source').on('tasks').columns(['trigger_task_id']).execute();

  // Work items. A job is queued, claimed by one dispatcher under a lease, then running (its run's
  // lease takes over), then done, failed or cancelled. Retries put the same job back in the queue.
  await db.schema
    .createTable('task_jobs')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('task_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('reason', 'varchar(16)', (c) => c.notNull())
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('serial', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('priority_rank', 'integer', (c) => c.notNull())
    .addColumn('due_at', 'varchar(24)')
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('backoff_seconds', 'integer', (c) => c.notNull())
    .addColumn('available_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('lease_owner', 'varchar(64)')
    .addColumn('lease_expires_at', 'varchar(24)')
    .addColumn('claimed_by', 'varchar(64)')
    .addColumn('run_id', 'varchar(36)')
    .addColumn('error', 'text')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('task_jobs_claim').on('task_jobs').columns(['state', 'priority_rank', 'due_at', 'id']).execute();
  await db.schema.createIndex('task_jobs_task').on('task_jobs').columns(['task_id', 'state']).execute();
  await db.schema.createIndex('task_jobs_run').on('task_jobs').columns(['run_id']).execute();

  // Every fire decision (cron time, webhook delivery, platform event): fired, queued or skipped, and
  // why. The unique key makes each fire happen once whichever replica sees it first.
  await db.schema
    .createTable('task_fires')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('task_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('source', 'varchar(16)', (c) => c.notNull())
    .addColumn('fire_key', 'varchar(128)', (c) => c.notNull())
    .addColumn('scheduled_for', 'varchar(24)')
    .addColumn('decided_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('decision', 'varchar(16)', (c) => c.notNull())
    .addColumn('reason', 'varchar(32)')
    .addColumn('missed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('job_id', 'varchar(36)')
    .addColumn('detail', 'text', (c) => c.notNull().defaultTo('{}'))
    .addUniqueConstraint('task_fires_once', ['task_id', 'fire_key'])
    .execute();
  await db.schema.createIndex('task_fires_task').on('task_fires').columns(['task_id', 'id']).execute();

  // Task runs are listed per task.
  await db.schema.createIndex('runs_tenant_task').on('runs').columns(['tenant_id', 'task_id', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('runs_tenant_task').execute();
  for (const table of ['task_fires', 'task_jobs', 'tasks']) {
    await db.schema.dropTable(table).execute();
  }
}
