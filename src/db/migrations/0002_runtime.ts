import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('conversations')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('app_id', 'varchar(128)')
    .addColumn('name', 'text')
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('message_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_message_at', 'varchar(24)')
    // lastMessageAt - createdAt in ms, kept with the counters so stats need no date arithmetic in SQL.
    .addColumn('duration_ms', 'integer', (c) => c.notNull().defaultTo(0))
    // The run answering in this conversation right now; compare-and-set keeps it to one.
    .addColumn('active_run_id', 'varchar(36)')
    .addColumn('created_by', 'varchar(64)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('deleted_at', 'varchar(24)')
    .execute();
  await db.schema.createIndex('conversations_tenant').on('conversations').columns(['tenant_id', 'id']).execute();
  await db.schema.createIndex('conversations_tenant_agent').on('conversations').columns(['tenant_id', 'agent_id']).execute();

  await db.schema
    .createTable('messages')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('conversation_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('run_id', 'varchar(36)')
    .addColumn('role', 'varchar(16)', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('tool_calls', 'text')
    .addColumn('token_usage', 'text')
    .addColumn('attachments', 'text')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('messages_conversation').on('messages').columns(['conversation_id', 'id']).execute();

  await db.schema
    .createTable('runs')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('conversation_id', 'varchar(36)')
    .addColumn('task_id', 'varchar(36)')
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('options', 'text', (c) => c.notNull())
    .addColumn('output', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('error', 'text')
    .addColumn('cost', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('input_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('output_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('duration_ms', 'integer')
    .addColumn('tool_calls', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('steps', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('warnings', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'varchar(64)')
    .addColumn('lease_expires_at', 'varchar(24)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('started_at', 'varchar(24)')
    .addColumn('completed_at', 'varchar(24)')
    .execute();
  await db.schema.createIndex('runs_tenant_agent').on('runs').columns(['tenant_id', 'agent_id', 'id']).execute();
  await db.schema.createIndex('runs_status_lease').on('runs').columns(['status', 'lease_expires_at']).execute();
  await db.schema.createIndex('runs_conversation').on('runs').columns(['conversation_id']).execute();

  // Every event a run streamed, so a client that reconnects with Last-Event-ID misses nothing.
  await db.schema
    .createTable('run_events')
    .addColumn('run_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('event', 'varchar(32)', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_events_pk', ['run_id', 'seq'])
    .execute();

  await db.schema
    .createTable('files')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    // Base64 text: portable across both dialects and shared by every replica.
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_by', 'varchar(64)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('files_tenant').on('files').columns(['tenant_id', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['files', 'run_events', 'runs', 'messages', 'conversations']) {
    await db.schema.dropTable(table).execute();
  }
}
