import { exportPages } from '../../db/export-pages.js';
import type { Executor } from './rows.js';

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return exportPages(db, tenantId, [
    { table: 'tasks', keys: ['id'] },
    { table: 'task_jobs', keys: ['id'] },
    { table: 'task_fires', keys: ['id'] },
  ]);
}

/** The newest sealed webhook secret, if any: what the master key check tries to open at start. */
export function newestWebhookSecret(db: Executor): Promise<{ id: string; webhook_secret: string | null } | undefined> {
  return db
    .selectFrom('tasks')
    .select(['id', 'webhook_secret'])
    .where('webhook_secret', 'is not', null)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}
