import type { Executor } from './rows.js';

/** `agentry export` (export/tenant.ts): the tenant's rows of this store's tables, a page at a time. */
export function exportSources(db: Executor, tenantId: string) {
  return [
    {
      table: 'tasks',
      page: (offset: number, limit: number) =>
        db.selectFrom('tasks').selectAll().where('tenant_id', '=', tenantId).orderBy('id').limit(limit).offset(offset).execute(),
    },
    {
      table: 'task_jobs',
      page: (offset: number, limit: number) =>
        db.selectFrom('task_jobs').selectAll().where('tenant_id', '=', tenantId).orderBy('id').limit(limit).offset(offset).execute(),
    },
    {
      table: 'task_fires',
      page: (offset: number, limit: number) =>
        db.selectFrom('task_fires').selectAll().where('tenant_id', '=', tenantId).orderBy('id').limit(limit).offset(offset).execute(),
    },
  ];
}
