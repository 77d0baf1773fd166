import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { newId, now } from '../ids.js';
import type { RunError } from '../runs/views.js';
import { Loop } from '../scheduler/loop.js';
import type { TraceContext } from '../tracing/tracing.js';
import { errorText, leaseOwner, leaseUntil, type TaskResources } from './resources.js';
import { PRIORITY_RANK, type Priority } from './schemas.js';
import * as store from './store/index.js';

/**
 * The work queue of tasks (task_jobs): new jobs, claims under a lease, renewal of the leases this
 * process holds, and cancelling queued work. The claim statement itself is in store/jobs.ts.
 */

type JobKind = 'agent' | 'action';
type JobReason = 'created' | 'approved' | 'manual' | 'retry' | 'schedule' | 'webhook' | 'event';

export interface NewJob {
  kind: JobKind;
  reason: JobReason;
  input?: Record<string, unknown>;
  /** Waits while other work of the task is active (overlap policy `queue`). */
  serial?: boolean;
  /** Created already claimed by this process, to execute at once (run, retry, approve). */
  claimed?: boolean;
  /** Traced, the fire queuing it, which the job's span links to; the active span otherwise. */
  trace?: TraceContext;
}

export interface CancelPending {
  /** Recorded on each cancelled job. */
  error: RunError;
  /** Only queued retries of earlier attempts (a manual retry supersedes them). */
  onlyRetries?: boolean;
}

export class JobQueue {
  /** Claimed jobs this process works on; their leases are renewed until the run starts or the action ends. */
  readonly held = new Set<string>();
  private readonly renewal: Loop;

  constructor(private readonly r: TaskResources) {
    this.renewal = new Loop('task lease renewal', r.leaseMs / 3, () => this.renewLeases(), r.log);
  }

  newJob(task: store.TaskRow, job: NewJob): store.JobRow {
    const at = now();
    const owner = job.claimed ? leaseOwner(this.r) : null;
    return {
      id: newId(),
      tenant_id: task.tenant_id,
      task_id: task.id,
      kind: job.kind,
      reason: job.reason,
      input: JSON.stringify(job.input ?? {}),
      serial: job.serial ? 1 : 0,
      priority_rank: PRIORITY_RANK[task.priority as Priority],
      due_at: task.due_at,
      state: job.claimed ? 'claimed' : 'queued',
      attempts: job.claimed ? 1 : 0,
      max_attempts: task.max_attempts,
      backoff_seconds: task.backoff_seconds,
      available_at: now(this.r.clock),
      lease_owner: owner,
      lease_expires_at: job.claimed ? leaseUntil(this.r) : null,
      claimed_by: owner,
      run_id: null,
      error: null,
      created_at: at,
      updated_at: at,
      // The fire or request queuing it, which the job's span links to when it runs (tracing).
      traceparent: this.r.tracing?.traceparent(job.trace) ?? null,
    };
  }

  /** Takes up to `limit` due jobs for this process's dispatcher, in claim order. */
  claimUpTo(limit: number) {
    const claim = { owner: leaseOwner(this.r), now: now(this.r.clock), leaseUntil: leaseUntil(this.r) };
    return store.claimNextJobs(this.r.db.kysely, this.r.db.dialect, claim, limit);
  }

  /** Claims one specific queued job (a one-time task run by hand takes over its queued job). */
  claim(trx: Kysely<Database>, jobId: string) {
    return store.claimJob(trx, jobId, { owner: leaseOwner(this.r), now: now(), leaseUntil: leaseUntil(this.r) });
  }

  private async renewLeases() {
    if (!this.held.size) return;
    await store.renewJobLeases(this.r.db.kysely, this.r.db.dialect, {
      owner: leaseOwner(this.r),
      jobIds: [...this.held],
      until: leaseUntil(this.r),
    });
  }

  /** Renews the leases of the jobs this process holds, a third of a lease apart. */
  startRenewal() {
    this.renewal.start();
  }

  stopRenewal() {
    return this.renewal.stop();
  }

  /**
   * Cancels a task's queued and claimed jobs inside the caller's transaction; answers how many were
   * cancelled.
   */
  async cancelPending(trx: Kysely<Database>, taskId: string, { error, onlyRetries = false }: CancelPending) {
    const jobs = await store.jobsOfTask(trx, taskId, ['queued', 'claimed']);
    let n = 0;
    for (const job of jobs) {
      if (onlyRetries && !(job.state === 'queued' && job.attempts > 0)) continue;
      // An approval action under way is not interrupted: approving was the decision.
      if (job.kind === 'action' && job.state === 'claimed') continue;
      const cancelled = { state: 'cancelled', error: errorText(error), lease_owner: null, lease_expires_at: null, updated_at: now() };
      if (await store.moveJob(trx, { jobId: job.id, from: [job.state], set: cancelled })) n++;
    }
    return n;
  }
}
