import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { now } from '../ids.js';
import type { RunFinished, RunOutcome } from '../runs/service.js';
import type { RunError } from '../runs/views.js';
import type { Actor } from '../tenancy/permissions.js';
import { isRunNotActive } from './failures.js';
import type { FireDecisions } from './fires.js';
import type { JobQueue } from './jobs.js';
import { errorText, type TaskResources } from './resources.js';
import * as store from './store/index.js';

/**
 * Settling jobs: when a job's run ends (done, cancelled, or failed and queued again per the retry
 * policy), when a claimed job fails without a run, and the sweep that finds what a dead process
 * left. Each move is a compare-and-set on the job, so it happens once, whoever notices first.
 */

/** How a run ended, as settling its job needs it. */
export interface EndedRun {
  runId: string;
  status: RunOutcome['status'];
  output: string;
  error: RunError | null;
}

const isEnded = (status: string): status is EndedRun['status'] => status === 'completed' || status === 'failed' || status === 'cancelled';

export interface ClaimedFailure {
  /** The job's task; undefined when it was deleted (only the job is moved). */
  task: store.TaskRow | undefined;
  error: RunError;
  /** The lease the caller saw expire (the sweep): the job moves only if nobody renewed it since. */
  leaseExpiresAt?: string | null;
}

export class Settling {
  constructor(
    private readonly r: TaskResources,
    private readonly jobs: JobQueue,
    private readonly fires: FireDecisions,
  ) {}

  /** When the attempt that just failed may be retried: back-off doubled per earlier attempt. */
  private retryAt(job: store.JobRow): string | null {
    if (job.attempts >= job.max_attempts) return null;
    const delay = job.backoff_seconds * 1000 * 2 ** Math.max(0, job.attempts - 1);
    return new Date(this.r.clock.now() + delay).toISOString();
  }

  /**
   * A claimed job failed without a run ending (the run could not start, the action failed, or the
   * claiming process died): queued again per the retry policy, or failed, and then so is the task.
   */
  async failClaimed(job: store.JobRow, { task, error, leaseExpiresAt }: ClaimedFailure) {
    const retryAt = this.retryAt(job);
    const at = now();
    const queued = await this.r.db.kysely.transaction().execute(async (trx) => {
      const patch = retryAt
        ? { state: 'queued', available_at: retryAt, error: errorText(error), lease_owner: null, lease_expires_at: null, updated_at: at }
        : { state: 'failed', error: errorText(error), lease_owner: null, lease_expires_at: null, updated_at: at };
      if (!(await store.moveJob(trx, { jobId: job.id, from: ['claimed'], set: patch, leaseExpiresAt }))) return false;
      if (!task) return false;
      await store.updateTask(trx, task.id, { status: 'failed', last_error: errorText(error), updated_at: at });
      const chained = retryAt
        ? false
        : await this.fires.fireEvent(trx, { event: 'task.failed', source: job, key: `job:${job.id}`, input: { jobId: job.id, error } });
      return Boolean(retryAt) || chained;
    });
    if (queued) this.r.enqueued();
  }

  /**
   * A claimed job whose run never started goes back in the queue without spending its attempt (the
   * claim counted one), available at `availableAt`; true when it moved. Guarded by the lease the
   * caller saw (the sweep) or by its owner (the worker), so a claim taken over since is left alone.
   */
  releaseUnstarted(
    job: store.JobRow,
    { availableAt, ...seen }: { availableAt: Date; leaseExpiresAt?: string | null; leaseOwner?: string },
  ) {
    const queued = {
      state: 'queued',
      attempts: Math.max(0, job.attempts - 1),
      available_at: availableAt.toISOString(),
      lease_owner: null,
      lease_expires_at: null,
      claimed_by: null,
      updated_at: now(),
    };
    return store.moveJob(this.r.db.kysely, { jobId: job.id, from: ['claimed'], set: queued, ...seen });
  }

  /** Told by RunsService when any run ends (here or, for interrupted runs, elsewhere). */
  async runEnded(runId: string, ended?: RunFinished) {
    const job = await store.findJobByRun(this.r.db.kysely, runId);
    if (job?.state !== 'running') return;
    await this.settleRun(job, ended);
  }

  /** The job's run has ended, or may have: settles the job when the run's state is final. */
  private async settleRun(job: store.JobRow, finished?: RunFinished) {
    const runId = job.run_id!;
    const run = finished?.ended ? { status: finished.status, ...finished.ended } : await this.r.runs.get(job.tenant_id, runId);
    if (!isEnded(run.status)) return;
    const ended: EndedRun = { runId, status: run.status, output: run.output, error: run.error };
    const queued = await this.r.db.kysely.transaction().execute((trx) => this.settleInTransaction(trx, job, ended));
    if (queued) this.r.enqueued();
  }

  /**
   * Settles the job of an ended run inside the caller's transaction; true when work was queued. The
   * task takes the run's status, and tasks chained to it fire.
   */
  async settleInTransaction(trx: Kysely<Database>, job: store.JobRow, run: EndedRun): Promise<boolean> {
    const { runId, status } = run;
    const retryAt = status === 'failed' ? this.retryAt(job) : null;
    const at = now();
    const error = run.error ? errorText(run.error) : null;
    const patch = retryAt
      ? { state: 'queued', run_id: null, available_at: retryAt, error, updated_at: at }
      : { state: status === 'completed' ? 'done' : status, error, updated_at: at };
    if (!(await store.moveJob(trx, { jobId: job.id, from: ['running'], set: patch, runId }))) return false;
    await store.recordRunEnd(trx, { taskId: job.task_id, runId, status, error, at });
    let chained = false;
    if (status === 'completed')
      chained = await this.fires.fireEvent(trx, { event: 'task.completed', source: job, key: runId, input: { runId, output: run.output } });
    if (status === 'failed' && !retryAt)
      chained = await this.fires.fireEvent(trx, { event: 'task.failed', source: job, key: runId, input: { runId, error: run.error } });
    return Boolean(retryAt) || chained;
  }

  /**
   * The safety net behind the fast paths: claimed jobs whose process stopped renewing the lease are
   * queued again (a run that never started spends no attempt), or, for approval actions, retried or
   * failed; running jobs whose run ended unheard of (the process died between the run's
   * terminal write and settling the job) are settled.
   */
  async sweep() {
    const realNow = new Date().toISOString();
    for (const job of await store.expiredClaims(this.r.db.kysely, realNow, 100)) {
      if (this.jobs.held.has(job.id)) continue;
      if (job.kind === 'agent') {
        // Its run never started (the run's start moves the job to running in the run's own
        // transaction): whether the claimer died or the database went away, nothing was attempted.
        if (await this.releaseUnstarted(job, { availableAt: new Date(this.r.clock.now()), leaseExpiresAt: job.lease_expires_at })) {
          this.r.log.warn({ jobId: job.id, taskId: job.task_id }, 'task work lost its lease before its run started: queued again');
          this.r.enqueued();
        }
        continue;
      }
      // An approval action may have had its effect before its process stopped: the attempt counts.
      const task = await store.findTaskById(this.r.db.kysely, job.task_id);
      this.r.log.warn({ jobId: job.id, taskId: job.task_id }, 'task work lost its lease: its process stopped');
      const error = { code: 'interrupted', message: 'the process working on it stopped before it finished' };
      await this.failClaimed(job, { task, error, leaseExpiresAt: job.lease_expires_at });
    }
    const quietSince = new Date(Date.now() - this.r.leaseMs).toISOString();
    for (const job of await store.runningJobs(this.r.db.kysely, quietSince, 500)) {
      await this.settleRun(job).catch((err) => this.r.log.error({ err, jobId: job.id }, 'settling a task job failed'));
    }
  }

  /** Stops a task's running runs (here or elsewhere) and settles their jobs. */
  async cancelRunning(tenantId: string, taskId: string, actor: Actor) {
    const jobs = await store.jobsOfTask(this.r.db.kysely, taskId, ['running']);
    for (const job of jobs) {
      try {
        await this.r.runs.cancel({ tenantId, actor }, job.run_id!);
      } catch (err) {
        if (!isRunNotActive(err)) throw err;
      }
      await this.runEnded(job.run_id!);
    }
  }
}
