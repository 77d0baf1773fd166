import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Tool calls that wait for a person (docs/runtime.md, "Tool calls that wait for approval"):
 * - `tool_approvals` (the approvals domain): one row per waiting call, its decision and who made it,
 *   and when it expires; `resumed_at` is set when the run took the decision in.
 * - `run_suspensions` (the runs domain): what resuming a run that waits needs (its tool loop's prompt,
 *   the paused step's calls, its result so far), kept until a process claims the run.
 * - `runs.status` widened for `awaiting_approval` (17 characters; the column was varchar(16), which
 *   only PostgreSQL enforces).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter)
    await db.schema
      .alterTable('runs')
      .alterColumn('status', (c) => c.setDataType('varchar(32)'))
      .execute();
  await db.schema
    .createTable('tool_approvals')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('run_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('conversation_id', 'varchar(36)')
    .addColumn('tool_call_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('tool_name', 'varchar(128)', (c) => c.notNull())
    .addColumn('arguments', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    // pending, approved, rejected, expired, cancelled
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('on_timeout', 'varchar(16)', (c) => c.notNull())
    .addColumn('decided_arguments', 'text')
    .addColumn('decision_reason', 'text')
    .addColumn('decided_by_type', 'varchar(32)')
    .addColumn('decided_by_id', 'varchar(64)')
    .addColumn('decided_at', 'varchar(24)')
    .addColumn('resumed_at', 'varchar(24)')
    .addColumn('expires_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tool_approvals_inbox').on('tool_approvals').columns(['tenant_id', 'status', 'id']).execute();
  await db.schema.createIndex('tool_approvals_run').on('tool_approvals').columns(['run_id', 'status']).execute();
  await db.schema.createIndex('tool_approvals_expiry').on('tool_approvals').columns(['status', 'expires_at']).execute();
  // The sweep's look for decided calls no run took in yet (every second, on every replica): few rows, kept apart.
  await sql`create index tool_approvals_untaken on tool_approvals (status, run_id) where resumed_at is null`.execute(db);

  await db.schema
    .createTable('run_suspensions')
    .addColumn('run_id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('run_suspensions').execute();
  await db.schema.dropTable('tool_approvals').execute();
}
