import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { notifyOnChange, stopNotifyingOnChange } from './0007_change_notifications.js';

/**
 * Memory that outlives a conversation (docs/runtime.md, "Memory"): an agent's named memory blocks,
 * agent-wide (`user_id` null) or one end user's, rendered into the system prompt; every change kept as
 * a version (the text before and after, who made it). Conversations learn whose they are (`user_id`),
 * so a run knows which user's blocks it reads and writes.
 *
 * Agent-wide blocks have no user: a unique index over a nullable column would let two of them share a
 * label on both dialects, so each kind of block has a partial unique index of its own.
 *
 * A run's system prompt reads the blocks from memory (db/changes.ts): on PostgreSQL, writes to
 * `memory_blocks` NOTIFY `agentry_changes` like 0007's tables, so every replica drops what it cached.
 */
const CACHED_TABLES = ['memory_blocks'] as const;

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('conversations').addColumn('user_id', 'varchar(128)').execute();
  await sql`create index conversations_tenant_user on conversations (tenant_id, user_id, id) where user_id is not null`.execute(db);

  await db.schema
    .createTable('memory_blocks')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('user_id', 'varchar(128)')
    .addColumn('label', 'varchar(64)', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_by_type', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_by_id', 'varchar(255)')
    .execute();
  if (isPostgres(db)) await notifyOnChange(db, CACHED_TABLES);
  await sql`create unique index memory_blocks_agent_label on memory_blocks (tenant_id, agent_id, label) where user_id is null`.execute(db);
  await sql`create unique index memory_blocks_user_label on memory_blocks (tenant_id, agent_id, user_id, label) where user_id is not null`.execute(
    db,
  );

  await db.schema
    .createTable('memory_block_versions')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('user_id', 'varchar(128)')
    .addColumn('label', 'varchar(64)', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    // created, set, appended, replaced, deleted
    .addColumn('change', 'varchar(16)', (c) => c.notNull())
    // The text after the change (null: deleted) and before it (null: the block did not exist).
    .addColumn('value', 'text')
    .addColumn('previous_value', 'text')
    .addColumn('actor_type', 'varchar(32)', (c) => c.notNull())
    .addColumn('actor_id', 'varchar(255)')
    .addColumn('run_id', 'varchar(36)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  // One number per version of a label, across deletes: a block made again continues its label's history.
  await sql`create unique index memory_versions_agent_label on memory_block_versions (tenant_id, agent_id, label, version) where user_id is null`.execute(
    db,
  );
  await sql`create unique index memory_versions_user_label on memory_block_versions (tenant_id, agent_id, user_id, label, version) where user_id is not null`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('memory_block_versions').execute();
  if (isPostgres(db)) await stopNotifyingOnChange(db, CACHED_TABLES);
  await db.schema.dropTable('memory_blocks').execute();
  await db.schema.dropIndex('conversations_tenant_user').execute();
  await db.schema.alterTable('conversations').dropColumn('user_id').execute();
}
