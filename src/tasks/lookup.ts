import type { Kysely } from 'kysely';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { NotFound } from '../errors.js';
import { recordAudit } from '../tenancy/audit.js';
import type { Principal } from '../tenancy/permissions.js';
import type { Task } from './schemas.js';
import * as store from './store/index.js';
import { taskView } from './views.js';

/** What every operation on a task does first and last: find it in the tenant, answer its view. */
export class TaskLookup {
  constructor(
    private readonly db: Db,
    /** Webhook URLs in views are absolute. */
    private readonly publicBaseUrl: string,
  ) {}

  /** The task (not deleted) of this tenant; another tenant's is simply not found. */
  async row(tenantId: string, id: string) {
    const row = await store.findTask(this.db.kysely, tenantId, id);
    if (!row) throw new NotFound('task');
    return row;
  }

  view(row: store.TaskRow & { queued_at?: string | null }): Task {
    return taskView(row, this.publicBaseUrl);
  }

  async get(tenantId: string, id: string): Promise<Task> {
    return this.view(await this.row(tenantId, id));
  }
}

export interface TaskAudit {
  who: Pick<Principal, 'tenantId' | 'actor'>;
  action: string;
  taskId: string;
  detail: Record<string, unknown>;
}

/** Records what was done to a task, in the transaction that did it. */
export const auditTask = (trx: Kysely<Database>, { who, action, taskId, detail }: TaskAudit) =>
  recordAudit(trx, { tenantId: who.tenantId, actor: who.actor, action, resourceType: 'task', resourceId: taskId, detail });
