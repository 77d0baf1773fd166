import type { Kysely } from 'kysely';

/**
 * A tenant's code executions running now, across replicas (docs/code-execution.md, "Limits"): slot
 * n of `concurrentExecutions` is held by one execution until it ends, or until `expires_at` when the
 * replica running it died first.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('code_slots')
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('code_slots_pk', ['tenant_id', 'slot'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('code_slots').execute();
}
