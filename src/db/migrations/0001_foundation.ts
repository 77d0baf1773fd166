import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('tenants')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('settings', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull().references('tenants.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('permissions', 'text', (c) => c.notNull())
    .addColumn('created_by', 'varchar(36)')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('revoked_at', 'varchar(24)')
    .execute();
  await db.schema.createIndex('api_keys_tenant').on('api_keys').columns(['tenant_id', 'id']).execute();

  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('actor_type', 'varchar(32)', (c) => c.notNull())
    .addColumn('actor_id', 'varchar(64)')
    .addColumn('action', 'varchar(64)', (c) => c.notNull())
    .addColumn('resource_type', 'varchar(64)', (c) => c.notNull())
    .addColumn('resource_id', 'varchar(64)')
    .addColumn('detail', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_events_tenant').on('audit_events').columns(['tenant_id', 'id']).execute();
  await db.schema.createIndex('audit_events_resource').on('audit_events').columns(['tenant_id', 'resource_type', 'resource_id']).execute();

  await db.schema
    .createTable('agents')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull().references('tenants.id'))
    .addColumn('app_id', 'varchar(128)', (c) => c.notNull())
    .addColumn('team_id', 'varchar(128)')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('role', 'text')
    .addColumn('description', 'text')
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('system_prompt', 'text')
    .addColumn('context_prompt', 'text')
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('hosting', 'varchar(16)', (c) => c.notNull())
    .addColumn('tools', 'text', (c) => c.notNull())
    .addColumn('configuration', 'text', (c) => c.notNull())
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agents_tenant').on('agents').columns(['tenant_id', 'id']).execute();
  await db.schema.createIndex('agents_tenant_app').on('agents').columns(['tenant_id', 'app_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['agents', 'audit_events', 'api_keys', 'tenants']) {
    await db.schema.dropTable(table).execute();
  }
}
