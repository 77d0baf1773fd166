import { exportPages } from '../db/export-pages.js';
import { sql, type Kysely, type Selectable, type Updateable } from 'kysely';
import type { ConversationTable, Database, MessageTable } from '../db/schema.js';
import { countRows, type Page } from '../db/count.js';
import type { DeferredInserts } from '../db/group-commit.js';
import { insertPrepared, runPrepared } from '../db/prepared.js';

/** SQL for conversations and messages; every statement names its tenant. */

export type ConversationRow = Selectable<ConversationTable>;
export type MessageRow = Selectable<MessageTable>;
type Executor = Kysely<Database>;

export interface ConversationFilter {
  agentId?: string;
  status?: string;
  appId?: string;
  userId?: string;
}

export async function listConversations(
  db: Executor,
  { tenantId, filter, limit, offset }: { tenantId: string; filter: ConversationFilter } & Page,
) {
  let q = db.selectFrom('conversations').where('tenant_id', '=', tenantId).where('deleted_at', 'is', null);
  if (filter.agentId) q = q.where('agent_id', '=', filter.agentId);
  if (filter.status) q = q.where('status', '=', filter.status);
  if (filter.appId) q = q.where('app_id', '=', filter.appId);
  if (filter.userId) q = q.where('user_id', '=', filter.userId);
  const [rows, count] = await Promise.all([q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total: count };
}

export function findConversation(db: Executor, tenantId: string, id: string) {
  return db
    .selectFrom('conversations')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export function insertConversation(db: Executor, row: ConversationRow) {
  return insertPrepared(db, 'conversations', [row]);
}

export function updateConversation(db: Executor, tenantId: string, id: string, patch: Updateable<ConversationTable>) {
  return db
    .updateTable('conversations')
    .set(patch)
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** When messages are counted, and when their conversation was created (its duration runs from then to `at`). */
interface CountedAt {
  at: string;
  createdAt: string;
}

/** A run's claim on a conversation, counting the user's message the run answers. */
export interface ConversationClaim extends CountedAt {
  runId: string;
}

/**
 * Claims the conversation for a run: succeeds only when no other run is answering in it. Answers the
 * conversation's message count with the user's message counted (recent-messages.ts keys on it), or null
 * when another run holds it.
 */
export async function claimConversation(db: Executor, tenantId: string, id: string, claim: ConversationClaim): Promise<number | null> {
  const claimed = await runPrepared(
    db,
    'claim conversation',
    (q, p) =>
      q
        .updateTable('conversations')
        .set({
          active_run_id: p('runId'),
          // The user's message the run answers is counted in the same statement.
          message_count: sql<number>`message_count + 1`,
          last_message_at: p('at'),
          duration_ms: p('duration'),
          updated_at: p('at'),
        })
        .where('tenant_id', '=', p('tenantId'))
        .where('id', '=', p('id'))
        .where('active_run_id', 'is', null)
        .where('deleted_at', 'is', null)
        .where('status', '=', 'active')
        .returning('message_count'),
    { tenantId, id, runId: claim.runId, at: claim.at, duration: Date.parse(claim.at) - Date.parse(claim.createdAt) },
  );
  return returnedCount(claimed) ?? null;
}

/** The message_count a statement's RETURNING gave (PostgreSQL may answer a number as text). */
function returnedCount(result: { rows: unknown[] }): number | undefined {
  const row = result.rows[0] as { message_count: number | string } | undefined;
  return row ? Number(row.message_count) : undefined;
}

export function releaseConversation(db: Executor, id: string, runId: string) {
  return runPrepared(
    db,
    'release conversation',
    (q, p) => q.updateTable('conversations').set({ active_run_id: null }).where('id', '=', p('id')).where('active_run_id', '=', p('runId')),
    { id, runId },
  );
}

/** A conversation's row (then a message's) inserted with the other rows of a group commit's transaction. */
export function deferConversation(later: DeferredInserts, row: ConversationRow) {
  later.insert('conversations', row);
}

export function deferMessage(later: DeferredInserts, row: MessageRow) {
  later.insert('messages', row);
}

export function insertMessage(db: Executor, row: MessageRow) {
  return insertPrepared(db, 'messages', [row]);
}

/** Messages added to a conversation; with `releaseRunId`, the conversation is also released if that run holds it. */
export interface MessageCount extends CountedAt {
  added: number;
  releaseRunId?: string;
}

/**
 * Adds messages to the counters in the same statement, so concurrent writers never lose a count;
 * with `releaseRunId`, also releases the conversation if that run holds it (as releaseConversation).
 * Answers the conversation's message count after it (undefined when the conversation is gone).
 */
export async function countMessages(db: Executor, id: string, { added, at, createdAt, releaseRunId }: MessageCount) {
  const counted = await runPrepared(
    db,
    releaseRunId ? 'count messages and release' : 'count messages',
    (q, p) =>
      q
        .updateTable('conversations')
        .set({
          message_count: sql<number>`message_count + ${p('added')}`,
          last_message_at: p('at'),
          duration_ms: p('duration'),
          updated_at: p('at'),
          ...(releaseRunId
            ? { active_run_id: sql<string | null>`case when active_run_id = ${p('runId')} then null else active_run_id end` }
            : {}),
        })
        .where('id', '=', p('id'))
        .returning('message_count'),
    { id, added, at, duration: Date.parse(at) - Date.parse(createdAt), runId: releaseRunId ?? null },
  );
  return returnedCount(counted);
}

/** A page of a conversation's messages: the newest `limit` older than the message `before` (else the newest). */
export interface MessagePage {
  limit: number;
  before?: string;
}

/** The newest `limit` messages older than the cursor, returned oldest first. */
export async function messagesBefore(db: Executor, tenantId: string, conversationId: string, { limit, before }: MessagePage) {
  let q = db.selectFrom('messages').selectAll().where('tenant_id', '=', tenantId).where('conversation_id', '=', conversationId);
  if (before) q = q.where('id', '<', before);
  const rows = await q
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const hasMore = rows.length > limit;
  return { rows: rows.slice(0, limit).reverse(), hasMore };
}

/**
 * What a run gives the model of the conversation: the newest `limit` messages' id, role, text and tool
 * calls (with their results), oldest first. Only these columns: the full rows cost nearly three times as
 * much to read (51 rows: 132 against 48 µs on SQLite, with role and content alone).
 */
export async function history(db: Executor, tenantId: string, conversationId: string, limit: number) {
  const rows = await db
    .selectFrom('messages')
    .select(['id', 'role', 'content', 'tool_calls'])
    .where('tenant_id', '=', tenantId)
    .where('conversation_id', '=', conversationId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.reverse();
}

/** A conversation's running summary of the turns its model's window no longer holds (runtime/context/fit.ts). */
export function findSummary(db: Executor, tenantId: string, conversationId: string) {
  return db
    .selectFrom('conversation_summaries')
    .select(['summary', 'through_message_id'])
    .where('tenant_id', '=', tenantId)
    .where('conversation_id', '=', conversationId)
    .executeTakeFirst();
}

export async function saveSummary(
  db: Executor,
  row: { tenant_id: string; conversation_id: string; summary: string; through_message_id: string; updated_at: string },
) {
  const { summary, through_message_id, updated_at } = row;
  await db
    .insertInto('conversation_summaries')
    .values(row)
    .onConflict((oc) => oc.column('conversation_id').doUpdateSet({ summary, through_message_id, updated_at }))
    .execute();
}

export function findMessage(db: Executor, tenantId: string, conversationId: string, id: string) {
  return db
    .selectFrom('messages')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('conversation_id', '=', conversationId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The assistant message a run added. */
export function findReply(db: Executor, tenantId: string, runId: string) {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('run_id', '=', runId)
    .where('role', '=', 'assistant')
    .executeTakeFirst();
}

export async function stats(db: Executor, tenantId: string) {
  const row = await db
    .selectFrom('conversations')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('total'),
      eb.fn.sum<number | string | null>(eb.case().when('status', '=', 'active').then(1).else(0).end()).as('active'),
      eb.fn.sum<number | string | null>(eb.case().when('status', '=', 'completed').then(1).else(0).end()).as('completed'),
      eb.fn.sum<number | string | null>(eb.case().when('status', '=', 'archived').then(1).else(0).end()).as('archived'),
      eb.fn.sum<number | string | null>('message_count').as('messages'),
      eb.fn.avg<number | string | null>('duration_ms').as('avgDuration'),
    ])
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return {
    total: Number(row.total),
    active: Number(row.active ?? 0),
    completed: Number(row.completed ?? 0),
    archived: Number(row.archived ?? 0),
    totalMessages: Number(row.messages ?? 0),
    averageDurationMs: Math.round(Number(row.avgDuration ?? 0)),
  };
}

// ---- files (attachments) ----

export type FileRow = Database['files'];

export function insertFile(db: Executor, row: FileRow) {
  return db.insertInto('files').values(row).execute();
}

export function findFile(db: Executor, tenantId: string, id: string) {
  return db.selectFrom('files').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

/** Deletes the tenant's file: its name and size, or undefined when there was none. */
export function deleteFile(db: Executor, tenantId: string, id: string) {
  return db.deleteFrom('files').where('tenant_id', '=', tenantId).where('id', '=', id).returning(['name', 'size']).executeTakeFirst();
}

export function findFiles(db: Executor, tenantId: string, ids: string[]) {
  return db.selectFrom('files').selectAll().where('tenant_id', '=', tenantId).where('id', 'in', ids).execute();
}

export interface FileFilter {
  /** Only the files this run's tools made (a code execution's /output). */
  runId?: string;
}

/** A page of the tenant's files (metadata only), newest first. */
export async function listFiles(db: Executor, { tenantId, filter, limit, offset }: { tenantId: string; filter: FileFilter } & Page) {
  let q = db.selectFrom('files').where('tenant_id', '=', tenantId);
  if (filter.runId) q = q.where('run_id', '=', filter.runId);
  const columns = ['id', 'name', 'content_type', 'size', 'created_at', 'run_id', 'tool_call_id'] as const;
  const [rows, count] = await Promise.all([q.select(columns).orderBy('id', 'desc').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total: count };
}

/** The file ids the conversation's messages name (their attachments), of its last `limit` messages that have any. */
export async function conversationAttachments(db: Executor, tenantId: string, conversationId: string, limit: number) {
  return db
    .selectFrom('messages')
    .select('attachments')
    .where('tenant_id', '=', tenantId)
    .where('conversation_id', '=', conversationId)
    .where('attachments', 'is not', null)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

// Retention (retention/sweep.ts through the conversations and files services): small batches, each its own transaction.

/**
 * Up to `limit` conversations of the tenant untouched since `cutoff` (no message, no change) and not
 * busy with a run, deleted with their messages; how many.
 */
export async function deleteConversationsBefore(db: Executor, tenantId: string, cutoff: string, limit: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('conversations')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('updated_at', '<', cutoff)
      .where('active_run_id', 'is', null)
      .limit(limit)
      .execute();
    if (!rows.length) return 0;
    const ids = rows.map((r) => r.id);
    // One a run claimed meanwhile stays, and so do its messages.
    const gone = (
      await trx.deleteFrom('conversations').where('id', 'in', ids).where('active_run_id', 'is', null).returning('id').execute()
    ).map((r) => r.id);
    if (gone.length) await trx.deleteFrom('messages').where('tenant_id', '=', tenantId).where('conversation_id', 'in', gone).execute();
    // A summary holds the conversation's content: it goes with it.
    if (gone.length)
      await trx.deleteFrom('conversation_summaries').where('tenant_id', '=', tenantId).where('conversation_id', 'in', gone).execute();
    return gone.length;
  });
}

/** Up to `limit` files of the tenant uploaded before `cutoff`, deleted; how many. */
export async function deleteFilesBefore(db: Executor, tenantId: string, cutoff: string, limit: number): Promise<number> {
  const r = await db
    .deleteFrom('files')
    .where('id', 'in', (eb) =>
      eb.selectFrom('files').select('id').where('tenant_id', '=', tenantId).where('created_at', '<', cutoff).limit(limit),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [
    { table: 'conversations', keys: ['id'] },
    { table: 'messages', keys: ['id'] },
    { table: 'files', keys: ['id'] },
    { table: 'conversation_summaries', keys: ['conversation_id'] },
  ]);
}
