import { now } from '../ids.js';
import { logUnder } from '../tracing/logs.js';
import { failSpan, type TraceContext } from '../tracing/tracing.js';
import { type RunOutcome, splitResponseFormat } from '../runs/service.js';
import type { Actor } from '../tenancy/permissions.js';
import { objectColumn, optionalObjectColumn } from './columns.js';
import { actionError, agentGone, isRefusal, startFailure } from './failures.js';
import type { JobQueue } from './jobs.js';
import { SCHEDULER_ACTOR, errorText, leaseOwner, type TaskResources } from './resources.js';
import type { Settling } from './settling.js';
import * as store from './store/index.js';

/**
 * Executing a job claimed by this process: starting its agent run (the job is marked running in the
 * run's start and settled in the run's end, each in the run's own transaction), or performing its
 * approval action. What to do when a start is refused is decided here, from failures.ts.
 */

export interface Started {
  runId: string | null;
  conversationId: string | null;
  startedAt: string;
  /** Settles when the work has ended and the job is settled. */
  finished: Promise<void>;
}

/** A run's start found its job no longer claimed by this process: the start is abandoned. */
class JobNoLongerClaimed extends Error {}

const actorOf = (type: string | null, id: string | null): Actor => (type ? { type: type as Actor['type'], id } : SCHEDULER_ACTOR);

export class TaskWorker {
  constructor(
    private readonly r: TaskResources,
    private readonly jobs: JobQueue,
    private readonly settling: Settling,
  ) {}

  /** Executes a job claimed by this process: starts its agent run, or performs its approval action. */
  /** `parent`: traced, the request of a person starting the job by hand. */
  async start(job: store.JobRow, actor: Actor = SCHEDULER_ACTOR, parent?: TraceContext): Promise<Started | null> {
    const tracing = this.r.tracing;
    if (!tracing) return this.startClaimed(job, actor);
    // Traced, a job is a span (its run a child) linked to the fire or request that queued it, which
    // may have been another replica's and long ago: a link, not a parent; a job the dispatcher took is
    // a trace of its own, one a person started by hand a part of their request's. It lasts until the work ends.
    const span = tracing.startSpan('task.job', {
      root: actor === SCHEDULER_ACTOR,
      parent,
      links: [job.traceparent],
      attributes: {
        'agentry.tenant.id': job.tenant_id,
        'agentry.task.id': job.task_id,
        'agentry.job.id': job.id,
        'agentry.job.kind': job.kind,
        'agentry.job.reason': job.reason,
        'agentry.job.attempt': job.attempts,
      },
    });
    const unlog = logUnder(job.id, span);
    const end = () => {
      span.end();
      unlog();
    };
    let started: Started | null;
    try {
      started = await tracing.with(span, (ctx) => this.startClaimed(job, actor, ctx));
    } catch (err) {
      failSpan(span, err);
      end();
      throw err;
    }
    if (!started) {
      end();
      return null;
    }
    if (started.runId) span.setAttribute('agentry.run.id', started.runId);
    return { ...started, finished: started.finished.finally(end) };
  }

  /** `trace`: traced, the job's span, the parent of the run it starts. */
  private async startClaimed(job: store.JobRow, actor: Actor, trace?: TraceContext): Promise<Started | null> {
    this.jobs.held.add(job.id);
    try {
      return job.kind === 'action' ? await this.performAction(job) : await this.startRun(job, actor, trace);
    } finally {
      this.jobs.held.delete(job.id);
    }
  }

  /** For the dispatcher: executes the job and resolves when its work has ended. */
  async execute(job: store.JobRow): Promise<void> {
    try {
      const started = await this.start(job);
      await started?.finished;
    } catch (err) {
      // A run that could not start (agent paused, deleted...) is already recorded on the job and task.
      if (!isRefusal(err)) throw err;
    }
  }

  private async startRun(job: store.JobRow, actor: Actor, trace: TraceContext | undefined): Promise<Started | null> {
    const task = await store.findTaskById(this.r.db.kysely, job.task_id);
    if (!task) {
      const cancelled = {
        state: 'cancelled',
        error: errorText({ code: 'task_deleted', message: 'the task was deleted' }),
        lease_owner: null,
        lease_expires_at: null,
        updated_at: now(),
      };
      await store.moveJob(this.r.db.kysely, { jobId: job.id, from: ['claimed'], set: cancelled });
      return null;
    }
    let runId: string;
    let conversationId: string;
    let startedAt: string;
    let queuedMore = false;
    let done: Promise<RunOutcome | null>;
    try {
      const agent = await this.r.agents.get(task.tenant_id, task.agent_id);
      const merged = { ...objectColumn(task.input, 'tasks.input'), ...objectColumn(job.input, 'task_jobs.input') };
      // A responseFormat in the input shapes the answer rather than being shown to the model.
      const { responseFormat, rest: input } = splitResponseFormat(merged);
      const started = await this.r.runs.start({
        principal: { tenantId: task.tenant_id, actor },
        run: {
          kind: 'task',
          agent,
          input: { content: task.description, modelContext: Object.keys(input).length ? JSON.stringify(input) : undefined },
          where: {
            taskId: task.id,
            trace,
            // The job is marked running, and the task takes the run, in the run's own start; the job is
            // settled in the run's own end.
            onStart: async (trx, run) => {
              const r = await store.markJobRunning(trx, { jobId: job.id, owner: leaseOwner(this.r), runId: run.runId, at: now() });
              if (!Number(r.numUpdatedRows)) throw new JobNoLongerClaimed();
              await store.updateTask(trx, task.id, {
                status: 'running',
                last_run_id: run.runId,
                last_run_at: run.startedAt,
                last_error: null,
                updated_at: now(),
              });
            },
            onFinish: async (trx, run) => {
              queuedMore = await this.settling.settleInTransaction(trx, job, { runId: run.runId, status: run.status, ...run.ended! });
            },
          },
          options: { responseFormat },
        },
      });
      if (!('run' in started)) throw new Error('a task run never joins a conversation');
      ({ runId, conversationId, startedAt, done } = started.run);
    } catch (err) {
      // The job was cancelled (or its task deleted) while the run was starting: no run was created.
      if (err instanceof JobNoLongerClaimed) return null;
      const failure = startFailure(err);
      // The database away is nobody's decision: the job goes back in the queue, its attempt unspent,
      // whoever started it (a person is told). If that write fails too, the job stays claimed until
      // its lease expires and the sweep puts it back the same way.
      if (failure.kind === 'database_unavailable') {
        const release = {
          leaseOwner: leaseOwner(this.r),
          availableAt: new Date(this.r.clock.now() + failure.retryAfterSeconds * 1000),
        };
        await this.settling
          .releaseUnstarted(job, release)
          .catch((e) => this.r.log.warn({ err: e, jobId: job.id }, 'a task job could not be queued again: the sweep will'));
        this.r.log.warn({ err, taskId: task.id, jobId: job.id }, 'task run could not start: the database is unavailable');
        if (actor === SCHEDULER_ACTOR) return null;
        throw err;
      }
      // Automatic work refused for now goes back in the queue a little later instead of spending an
      // attempt; a person's manual run is told why.
      if (failure.kind === 'refused_for_now' && actor === SCHEDULER_ACTOR) {
        await this.settling.releaseUnstarted(job, {
          leaseOwner: leaseOwner(this.r),
          availableAt: new Date(this.r.clock.now() + failure.retryAfterSeconds * 1000),
        });
        return null;
      }
      if (failure.kind === 'unexpected') this.r.log.error({ err, taskId: task.id, jobId: job.id }, 'task run could not start');
      await this.settling.failClaimed(job, { task, error: failure.error });
      throw failure.kind === 'agent_gone' ? agentGone() : err;
    }
    // A run that ends here has settled its job in its end's transaction (onFinish) before `done`
    // resolves; one ended elsewhere (null) was settled there, or is looked up here once more.
    const finished = done
      .then((outcome) => {
        if (!outcome) return this.settling.runEnded(runId);
        if (queuedMore) this.r.enqueued();
      })
      .catch((err) => this.r.log.error({ err, runId }, 'settling a task run failed'));
    return { runId, conversationId, startedAt, finished };
  }

  private async performAction(job: store.JobRow): Promise<Started | null> {
    const db = this.r.db.kysely;
    const task = await store.findTaskById(db, job.task_id);
    if (!task) {
      await store.moveJob(db, {
        jobId: job.id,
        from: ['claimed'],
        set: { state: 'cancelled', lease_owner: null, lease_expires_at: null, updated_at: now() },
      });
      return null;
    }
    const startedAt = now();
    const noRun = { runId: null, conversationId: null, startedAt, finished: Promise.resolve() };
    await store.updateTask(db, task.id, { status: 'running', last_run_at: startedAt, updated_at: startedAt });
    const handler = task.approval_action ? this.r.actions.get(task.approval_action)?.approved : undefined;
    if (!handler) {
      await this.settling.failClaimed(job, {
        task,
        error: { code: 'approval_action_unavailable', message: `no handler is registered for ${task.approval_action}` },
      });
      return noRun;
    }
    try {
      await handler({
        tenantId: task.tenant_id,
        taskId: task.id,
        payload: optionalObjectColumn(task.approval_payload, 'tasks.approval_payload') ?? {},
        decidedBy: actorOf(task.decided_by_type, task.decided_by_id),
      });
    } catch (err) {
      if (!isRefusal(err)) this.r.log.warn({ err, taskId: task.id, jobId: job.id, action: task.approval_action }, 'approval action failed');
      await this.settling.failClaimed(job, { task, error: actionError(err) });
      return noRun;
    }
    const at = now();
    await db.transaction().execute(async (trx) => {
      if (
        !(await store.moveJob(trx, {
          jobId: job.id,
          from: ['claimed'],
          set: { state: 'done', lease_owner: null, lease_expires_at: null, error: null, updated_at: at },
        }))
      )
        return;
      await store.updateTask(trx, task.id, { status: 'completed', last_error: null, updated_at: at });
    });
    return noRun;
  }
}
