import type { Kysely } from 'kysely';

/**
 * Idempotency keys (docs/runtime.md, "Streams and retries"): a client's `Idempotency-Key` claimed per
 * tenant, with the fingerprint of the request that claimed it and what that request started, so a
 * retry answers the original run or task instead of starting another.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('key', 'varchar(255)', (c) => c.notNull())
    // sha256 (hex) of method, route, path parameters and the canonical JSON body.
    .addColumn('fingerprint', 'varchar(64)', (c) => c.notNull())
    // Null while the claiming request has not started its run or task yet.
    .addColumn('run_id', 'varchar(36)')
    .addColumn('task_id', 'varchar(36)')
    .addColumn('message_id', 'varchar(36)')
    .addColumn('response_status', 'integer')
    .addColumn('created_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('expires_at', 'varchar(24)', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['tenant_id', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expires').on('idempotency_keys').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
