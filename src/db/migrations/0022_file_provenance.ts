import type { Kysely } from 'kysely';

/**
 * Files a tool made (docs/code-execution.md, "Files out": what a code execution leaves in /output)
 * name the run and the tool call that made them; uploaded files have neither. Listed by run
 * (`GET /api/v1/files?runId=`), hence the index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('files').addColumn('run_id', 'text').execute();
  await db.schema.alterTable('files').addColumn('tool_call_id', 'text').execute();
  await db.schema.createIndex('files_tenant_run').on('files').columns(['tenant_id', 'run_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('files_tenant_run').execute();
  await db.schema.alterTable('files').dropColumn('tool_call_id').execute();
  await db.schema.alterTable('files').dropColumn('run_id').execute();
}
