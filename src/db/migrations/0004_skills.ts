import type { Kysely } from 'kysely';

/**
 * Skills (custom and acquired from the store), their files (references, scripts), assignments to
 * agents, and connector connections and requests. Same SQL on both dialects: timestamps are ISO text,
 * JSON is text, booleans are 0/1 integers.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('skills')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'varchar(64)', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('category', 'varchar(64)')
    // custom (tenant-created) or store (acquired from the store catalog; store_id names the entry).
    .addColumn('source', 'varchar(16)', (c) => c.notNull())
    .addColumn('store_id', 'varchar(64)')
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('instructions', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    // Other SKILL.md front matter kept for export (license, compatibility, allowed-tools).
    .addColumn('front_matter', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_by', 'varchar(64)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  // A name identifies a skill inside its tenant (as the Agent Skills format intends); archived ones keep theirs.
  await db.schema.createIndex('skills_tenant_name').unique().on('skills').columns(['tenant_id', 'name']).execute();
  await db.schema.createIndex('skills_tenant_store').unique().on('skills').columns(['tenant_id', 'store_id']).execute();

  await db.schema
    .createTable('skill_files')
    .addColumn('skill_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    // reference or script
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('language', 'varchar(32)')
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('skill_files_pk', ['skill_id', 'kind', 'name'])
    .execute();

  await db.schema
    .createTable('skill_assignments')
    .addColumn('skill_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('priority', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('config', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('assigned_by', 'varchar(64)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .addPrimaryKeyConstraint('skill_assignments_pk', ['skill_id', 'agent_id'])
    .execute();
  await db.schema.createIndex('skill_assignments_agent').on('skill_assignments').columns(['tenant_id', 'agent_id']).execute();

  await db.schema
    .createTable('connector_connections')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('connector_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('configuration', 'text', (c) => c.notNull())
    .addColumn('connected_by', 'varchar(64)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('connector_connections_tenant')
    .unique()
    .on('connector_connections')
    .columns(['tenant_id', 'connector_id'])
    .execute();

  await db.schema
    .createTable('connector_requests')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('connector_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    // pending, accepted, rejected
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('task_id', 'varchar(36)')
    .addColumn('requested_by', 'varchar(64)')
    .addColumn('decided_by', 'varchar(64)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('decided_at', 'varchar(24)')
    .execute();
  await db.schema.createIndex('connector_requests_tenant').on('connector_requests').columns(['tenant_id', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['connector_requests', 'connector_connections', 'skill_assignments', 'skill_files', 'skills']) {
    await db.schema.dropTable(table).execute();
  }
}
