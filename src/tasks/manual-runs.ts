import type { Agent } from '../agents/schemas.js';
import type { AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import { now } from '../ids.js';
import { executable, inputResponseFormatErrors } from '../runs/service.js';
import type { Principal } from '../tenancy/permissions.js';
import { objectColumn } from './columns.js';
import type { TaskExecutor } from './executor.js';
import { agentGone, isNotFound } from './failures.js';
import { auditTask, type TaskLookup } from './lookup.js';
import * as store from './store/index.js';
import type { Started } from './worker.js';
import type { TraceContext } from '../tracing/tracing.js';

export interface ManualRunsOptions {
  db: Db;
  agents: AgentsService;
  executor: TaskExecutor;
  lookup: TaskLookup;
}

/**
 * Work a person starts on a task: run it now, or retry a failed one. Both start at once, outside
 * the worker pool, and answer the started run. Overlap policies govern automatic fires only.
 */
export class ManualRuns {
  constructor(private readonly o: ManualRunsOptions) {}

  /** The task's agent, if it still exists and can execute. */
  private async agentFor(task: store.TaskRow): Promise<Agent> {
    let agent: Agent;
    try {
      agent = await this.o.agents.get(task.tenant_id, task.agent_id);
    } catch (err) {
      if (isNotFound(err)) throw agentGone();
      throw err;
    }
    executable(agent);
    return agent;
  }

  private started(taskId: string, s: Started | null) {
    if (!s) throw new NotFound('task');
    return { runId: s.runId, status: 'running', startedAt: s.startedAt, taskId, conversationId: s.conversationId };
  }

  /** Starts a run now. A one-time task's queued work is taken over rather than left to run again later. */
  async run(principal: Principal, id: string, override: Record<string, unknown> | undefined, trace?: TraceContext) {
    const { db, executor, lookup } = this.o;
    const errors = inputResponseFormatErrors(override, 'body.input');
    if (errors.length) throw new InvalidInput(`${errors[0].path} ${errors[0].message}`, errors);
    const task = await lookup.row(principal.tenantId, id);
    if (task.status === 'awaiting_approval') throw new Conflict('task_awaiting_approval', 'the task awaits approval; approve it first');
    if (task.approval_action)
      throw new Conflict('task_not_runnable', 'an approval task performs its action when approved; retry it if that failed');
    await this.agentFor(task);
    const job = await db.kysely.transaction().execute(async (trx) => {
      let claimed: store.JobRow | undefined;
      if (task.type === 'one_time') {
        for (const queued of await store.jobsOfTask(trx, task.id, ['queued'])) {
          claimed = await executor.claim(trx, queued.id);
          if (claimed) break;
        }
      }
      if (claimed && override) {
        const input = JSON.stringify({ ...objectColumn(claimed.input, 'task_jobs.input'), ...override });
        await store.setJobInput(trx, claimed.id, input);
        claimed = { ...claimed, input };
      }
      if (!claimed) {
        claimed = executor.newJob(task, { kind: 'agent', reason: 'manual', input: override, claimed: true, trace });
        await store.insertJob(trx, claimed);
      }
      const detail = { jobId: claimed.id, input: override ? Object.keys(override) : [] };
      await auditTask(trx, { who: principal, action: 'task.run_requested', taskId: task.id, detail });
      return claimed;
    });
    return this.started(task.id, await executor.start(job, principal.actor, trace));
  }

  /** Runs a failed task again with the same configuration (and the failed run's input); a pending automatic retry is superseded. */
  async retry(principal: Principal, id: string, trace?: TraceContext) {
    const { db, executor, lookup } = this.o;
    const task = await lookup.row(principal.tenantId, id);
    if (task.status !== 'failed') throw new Conflict('task_not_failed', `only a failed task can be retried; this one is ${task.status}`);
    const isAction = Boolean(task.approval_action);
    if (!isAction) await this.agentFor(task);
    const lastJob = task.last_run_id ? await store.findJobByRun(db.kysely, task.last_run_id) : undefined;
    const job = await db.kysely.transaction().execute(async (trx) => {
      const moved = await store.transitionTask(trx, { taskId: task.id, from: ['failed'], set: { status: 'pending', updated_at: now() } });
      if (!Number(moved.numUpdatedRows)) throw new Conflict('task_not_failed', 'the task changed state meanwhile');
      const superseded = await executor.cancelPending(trx, task.id, {
        error: { code: 'superseded', message: 'superseded by a manual retry' },
        onlyRetries: true,
      });
      const job = executor.newJob(task, {
        kind: isAction ? 'action' : 'agent',
        reason: 'retry',
        input: lastJob ? objectColumn(lastJob.input, 'task_jobs.input') : undefined,
        claimed: true,
        trace,
      });
      await store.insertJob(trx, job);
      await auditTask(trx, { who: principal, action: 'task.retried', taskId: task.id, detail: { jobId: job.id, superseded } });
      return job;
    });
    const started = await executor.start(job, principal.actor, trace);
    if (isAction) {
      const after = await lookup.get(principal.tenantId, id);
      return { ...this.started(task.id, started), status: after.status };
    }
    return this.started(task.id, started);
  }
}
