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
