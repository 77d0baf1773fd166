import { countRows } from '../../db/count.js';
import type { Executor, FireRow, Page } from './rows.js';

/** SQL for the fire history (task_fires): one row per fire decision of a task. */

/** Records a fire decision once per (task, fire key); false when it was already recorded. */
export async function insertFire(db: Executor, row: FireRow): Promise<boolean> {
  const r = await db
    .insertInto('task_fires')
    .values(row)
    .onConflict((oc) => oc.columns(['task_id', 'fire_key']).doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) === 1;
}

export function findFire(db: Executor, taskId: string, fireKey: string) {
  return db.selectFrom('task_fires').selectAll().where('task_id', '=', taskId).where('fire_key', '=', fireKey).executeTakeFirst();
}

export async function listFires(db: Executor, { tenantId, taskId, limit, offset }: { tenantId: string; taskId: string } & Page) {
  const q = db.selectFrom('task_fires').where('tenant_id', '=', tenantId).where('task_id', '=', taskId);
  const [rows, count] = await Promise.all([q.selectAll().orderBy('id', 'desc').limit(limit).offset(offset).execute(), countRows(q)]);
  return { rows, total: count };
}
