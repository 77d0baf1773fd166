import type { Insertable, Kysely } from 'kysely';
import type { Database, IdempotencyKeyTable } from '../db/schema.js';

/** SQL for idempotency keys: the only module that names the `idempotency_keys` table. */

type Executor = Kysely<Database>;

/** Inserts the key unless the tenant already holds it; true when this call claimed it. */
export async function claimKey(db: Executor, row: Insertable<IdempotencyKeyTable>): Promise<boolean> {
  const result = await db
    .insertInto('idempotency_keys')
    .values(row)
    .onConflict((oc) => oc.columns(['tenant_id', 'key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export function findKey(db: Executor, tenantId: string, key: string) {
  return db.selectFrom('idempotency_keys').selectAll().where('tenant_id', '=', tenantId).where('key', '=', key).executeTakeFirst();
}

/** One claim of a tenant's key: the one made at `createdAt` (an abandoned claim's key may have been claimed again since). */
export interface KeyClaim {
  tenantId: string;
  key: string;
  createdAt: string;
}

/** What the claiming request started: the key answers retries with it from now on. */
export async function recordOutcome(
  db: Executor,
  { tenantId, key, createdAt }: KeyClaim,
  outcome: Pick<IdempotencyKeyTable, 'run_id' | 'task_id' | 'message_id' | 'response_status'>,
) {
  await db
    .updateTable('idempotency_keys')
    .set(outcome)
    .where('tenant_id', '=', tenantId)
    .where('key', '=', key)
    .where('created_at', '=', createdAt)
    .execute();
}

/** Drops a claim whose request started nothing (it failed first), or one that is expired or abandoned. */
export async function deleteKey(db: Executor, tenantId: string, key: string, createdAt?: string) {
  let q = db.deleteFrom('idempotency_keys').where('tenant_id', '=', tenantId).where('key', '=', key);
  if (createdAt !== undefined) q = q.where('created_at', '=', createdAt);
  await q.execute();
}

export async function deleteExpired(db: Executor, now: string): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
