import type { Kysely } from 'kysely';

/**
 * Agent identity and tool-based access control: platform and agent signing keys (private parts
 * encrypted), the store of issued tokens (revocation, replay protection) and TBAC policies.
 * Race-safety comes from unique constraints: key generations are unique (per agent for agent keys),
 * so concurrent processes creating "the next key" cannot both succeed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('identity_platform_keys')
    .addColumn('kid', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('generation', 'integer', (c) => c.notNull().unique())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_jwk', 'text', (c) => c.notNull())
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('activates_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('retires_at', 'varchar(24)')
    .addColumn('revoked_at', 'varchar(24)')
    .execute();

  await db.schema
    .createTable('identity_agent_keys')
    .addColumn('kid', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('generation', 'integer', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_jwk', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('rotated_at', 'varchar(24)')
    .addColumn('expires_at', 'varchar(24)')
    .addColumn('revoked_at', 'varchar(24)')
    .addUniqueConstraint('identity_agent_keys_generation', ['agent_id', 'generation'])
    .execute();
  await db.schema.createIndex('identity_agent_keys_tenant').on('identity_agent_keys').columns(['tenant_id', 'agent_id']).execute();

  await db.schema
    .createTable('identity_tokens')
    .addColumn('jti', 'varchar(128)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('kind', 'varchar(32)', (c) => c.notNull())
    .addColumn('agent_id', 'varchar(36)')
    .addColumn('client_id', 'text')
    .addColumn('api_key_id', 'varchar(36)')
    .addColumn('agent_key_id', 'varchar(64)')
    .addColumn('parent_jti', 'varchar(128)')
    .addColumn('issued_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('expires_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('revoked_at', 'varchar(24)')
    .execute();
  await db.schema.createIndex('identity_tokens_tenant').on('identity_tokens').columns(['tenant_id', 'kind']).execute();
  await db.schema.createIndex('identity_tokens_expiry').on('identity_tokens').columns(['expires_at']).execute();

  await db.schema
    .createTable('tbac_policies')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull().references('tenants.id'))
    .addColumn('caller_agent_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('callee_agent_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('tool_name', 'varchar(128)', (c) => c.notNull())
    .addColumn('effect', 'varchar(8)', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('conditions', 'text')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .addUniqueConstraint('tbac_policies_triple', ['tenant_id', 'caller_agent_id', 'callee_agent_id', 'tool_name'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['tbac_policies', 'identity_tokens', 'identity_agent_keys', 'identity_platform_keys']) {
    await db.schema.dropTable(table).execute();
  }
}
