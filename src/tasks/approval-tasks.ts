import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import { Conflict, Forbidden } from '../errors.js';
import { newId, now } from '../ids.js';
import type { Principal } from '../tenancy/permissions.js';
import type { ApprovalGateway } from './approvals.js';
import type { TaskExecutor } from './executor.js';
import { optionalObjectColumn } from './columns.js';
import { auditTask, type TaskLookup } from './lookup.js';
import { firstFire } from './new-task.js';
import type { Task } from './schemas.js';
import * as store from './store/index.js';
import type { TraceContext } from '../tracing/tracing.js';

export interface ApprovalTasksOptions {
  db: Db;
  agents: AgentsService;
  executor: TaskExecutor;
  lookup: TaskLookup;
  /** The app's clock: an approved scheduled task's first cron time. */
  clock: Clock;
  log: FastifyBaseLogger;
}

/**
 * Human decisions on tasks `awaiting_approval` (docs/scheduling.md, "Approvals"): approve, reject,
 * and the approval tasks other domains create through the ApprovalGateway port (approvals.ts),
 * whose action (one of the ApprovalActions the tasks domain is built with) is performed when approved.
 */
export class ApprovalTasks implements ApprovalGateway {
  constructor(private readonly o: ApprovalTasksOptions) {}

  /**
   * Approve: the decision is recorded with who and when. A task with an action performs it now
   * (through the action's handler, instead of running the agent) and answers completed or failed;
   * any other task becomes pending: a one-time task is queued, a scheduled one gets its first cron
   * time, a triggered one starts listening. `trace`: traced, the approving request's span (the parent
   * of an action's job, what a queued job links to).
   */
  async approve(principal: Principal, id: string, trace?: TraceContext): Promise<Task> {
    const { db, executor, lookup } = this.o;
    const task = await lookup.row(principal.tenantId, id);
    this.requireDecider(principal, task.approval_action);
    if (task.status !== 'awaiting_approval')
      throw new Conflict('task_not_awaiting_approval', `the task is ${task.status}, not awaiting approval`);
    const action = task.approval_action;
    if (action && !executor.actions.has(action)) {
      throw new Conflict('approval_action_unavailable', `nothing on this server can perform ${action}; the task stays awaiting approval`);
    }
    const at = now();
    const set = {
      status: action ? 'running' : 'pending',
      decision: 'approved',
      decided_by_type: principal.actor.type,
      decided_by_id: principal.actor.id,
      decided_at: at,
      next_run_at: firstFire(task, new Date(this.o.clock.now())),
      updated_at: at,
    } as const;
    // The task as the approval leaves it: its job is made from it, and a queued one is the answer.
    const decided = { ...task, ...set };
    const job = await db.kysely.transaction().execute(async (trx) => {
      const r = await store.transitionTask(trx, { taskId: task.id, from: ['awaiting_approval'], set });
      if (!Number(r.numUpdatedRows)) throw new Conflict('task_not_awaiting_approval', 'the task was decided meanwhile');
      let job: store.JobRow | null = null;
      if (action || task.type === 'one_time') {
        job = executor.newJob(decided, { kind: action ? 'action' : 'agent', reason: 'approved', claimed: Boolean(action), trace });
        await store.insertJob(trx, job);
      }
      await auditTask(trx, { who: principal, action: 'task.approved', taskId: task.id, detail: { action } });
      return job;
    });
    if (job && action) {
      await executor.start(job, principal.actor, trace);
      return lookup.get(principal.tenantId, id);
    }
    if (job) executor.onEnqueued();
    // Not read back, like a created task: by then it could already be running or done.
    return lookup.view({ ...decided, queued_at: job?.available_at ?? task.queued_at });
  }

  /** Reject: cancelled, with who and when; the action's rejection handler, if any, is told (best effort). */
  async reject(principal: Principal, id: string): Promise<Task> {
    const { db, executor, lookup, log } = this.o;
    const task = await lookup.row(principal.tenantId, id);
    this.requireDecider(principal, task.approval_action);
    if (task.status !== 'awaiting_approval')
      throw new Conflict('task_not_awaiting_approval', `the task is ${task.status}, not awaiting approval`);
    const at = now();
    await db.kysely.transaction().execute(async (trx) => {
      const r = await store.transitionTask(trx, {
        taskId: task.id,
        from: ['awaiting_approval'],
        set: {
          status: 'cancelled',
          decision: 'rejected',
          decided_by_type: principal.actor.type,
          decided_by_id: principal.actor.id,
          decided_at: at,
          updated_at: at,
        },
      });
      if (!Number(r.numUpdatedRows)) throw new Conflict('task_not_awaiting_approval', 'the task was decided meanwhile');
      await auditTask(trx, { who: principal, action: 'task.rejected', taskId: task.id, detail: { action: task.approval_action } });
    });
    const handler = task.approval_action ? executor.actions.get(task.approval_action)?.rejected : undefined;
    if (handler) {
      const payload = optionalObjectColumn(task.approval_payload, 'tasks.approval_payload') ?? {};
      await handler({ tenantId: task.tenant_id, taskId: task.id, payload, decidedBy: principal.actor }).catch((err) =>
        log.warn({ err, taskId: task.id, action: task.approval_action }, 'rejection handler failed'),
      );
    }
    return lookup.get(principal.tenantId, id);
  }

  async createApprovalTask(input: Parameters<ApprovalGateway['createApprovalTask']>[0]): Promise<{ taskId: string }> {
    const agent = await this.o.agents.get(input.tenantId, input.agentId);
    const row = store.newTaskRow({
      id: newId(),
      tenant_id: input.tenantId,
      agent_id: agent.id,
      app_id: agent.appId,
      team_id: agent.teamId,
      name: input.name.slice(0, 200),
      description: input.description,
      requires_approval: 1,
      status: 'awaiting_approval',
      approval_action: input.action,
      approval_payload: JSON.stringify(input.payload),
      requested_by_type: input.requestedBy.type,
      requested_by_id: input.requestedBy.id,
      created_by: input.requestedBy.id,
      created_at: now(),
    });
    await this.o.db.kysely.transaction().execute(async (trx) => {
      await store.insertTask(trx, row);
      const detail = { action: input.action, agentId: agent.id };
      await auditTask(trx, {
        who: { tenantId: input.tenantId, actor: input.requestedBy },
        action: 'task.approval_requested',
        taskId: row.id,
        detail,
      });
    });
    return { taskId: row.id };
  }

  /** A task whose action needs a permission (a skill assignment: skills:write) is decided only by a credential holding it. */
  private requireDecider(principal: Principal, action: string | null) {
    const needed = action ? this.o.executor.actions.get(action)?.permission : undefined;
    if (needed && !principal.permissions.has(needed)) {
      throw new Forbidden(`deciding this request (${action}) needs ${needed}, the permission of what approving it does`);
    }
  }
}
