import type { Kysely } from 'kysely';

/**
 * The reply a run added is looked up by run (POST /conversations/:id/messages answers with it).
 * Without this index that lookup scanned the tenant's messages: 16 ms per message on a tenant
 * with 50,000 of them (bench long-conversation).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('messages_run').on('messages').columns(['run_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('messages_run').execute();
}
