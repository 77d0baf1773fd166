import type { Kysely } from 'kysely';

/**
 * Context that fits the model and answers with a shape (docs/runtime.md): a conversation's running
 * summary of the turns its model's window no longer holds (the conversations domain's), and a run's
 * final answer validated against the caller's response format.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('conversation_summaries')
    .addColumn('conversation_id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('tenant_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('summary', 'text', (c) => c.notNull())
    // The newest message the summary covers (ids are time-ordered): later ones pushed out are summarised next.
    .addColumn('through_message_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .execute();
  // JSON of the validated answer object; null for runs without a response format.
  await db.schema.alterTable('runs').addColumn('structured_output', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('runs').dropColumn('structured_output').execute();
  await db.schema.dropTable('conversation_summaries').execute();
}
