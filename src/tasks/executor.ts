import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { RunFinished } from '../runs/service.js';
import type { Actor } from '../tenancy/permissions.js';
import { FireDecisions, type FireInput } from './fires.js';
import { JobQueue, type CancelPending, type NewJob } from './jobs.js';
import { SCHEDULER_ACTOR, leaseOwner, type TaskResources } from './resources.js';
import { Settling } from './settling.js';
import type * as store from './store/index.js';
import { TaskWorker } from './worker.js';
import type { TraceContext } from '../tracing/tracing.js';

/**
 * The work of tasks, as one facade over its parts (docs/scheduling.md):
 *   jobs.ts      the queue: new jobs, claims, leases, cancelling queued work
 *   fires.ts     fire decisions of scheduled and triggered tasks, chained events
 *   worker.ts    executing a claimed job: the agent run, or the approval action
 *   settling.ts  a job's end: retry, fail, chain; and the sweep after a process died
 */

/** What the task work is built from; the rest of its TaskResources it makes itself. */
export type TaskExecutorOptions = Pick<TaskResources, 'db' | 'agents' | 'runs' | 'clock' | 'leaseMs' | 'log' | 'tracing' | 'actions'>;

export class TaskExecutor {
  readonly actions: TaskResources['actions'];
  /** Told when work was queued here, so the dispatcher wakes at once. */
  onEnqueued: () => void = () => {};
  private readonly resources: TaskResources;
  private readonly jobs: JobQueue;
  private readonly fires: FireDecisions;
  private readonly settling: Settling;
  private readonly worker: TaskWorker;

  constructor(options: TaskExecutorOptions) {
    this.actions = options.actions;
    this.resources = { ...options, enqueued: () => this.onEnqueued() };
    this.jobs = new JobQueue(this.resources);
    this.fires = new FireDecisions(this.resources, this.jobs);
    this.settling = new Settling(this.resources, this.jobs, this.fires);
    this.worker = new TaskWorker(this.resources, this.jobs, this.settling);
  }

  /** Lease owner: the same id as this process's run leases. */
  get owner() {
    return leaseOwner(this.resources);
  }

  startRenewal() {
    this.jobs.startRenewal();
  }

  stopRenewal() {
    this.jobs.stopRenewal();
  }

  newJob(task: store.TaskRow, job: NewJob): store.JobRow {
    return this.jobs.newJob(task, job);
  }

  claimUpTo(limit: number) {
    return this.jobs.claimUpTo(limit);
  }

  /** Takes the next due job, or null. */
  claimNext() {
    return this.jobs.claimUpTo(1).then((jobs) => jobs[0] ?? null);
  }

  claim(trx: Kysely<Database>, jobId: string) {
    return this.jobs.claim(trx, jobId);
  }

  cancelPending(trx: Kysely<Database>, taskId: string, cancel: CancelPending) {
    return this.jobs.cancelPending(trx, taskId, cancel);
  }

  fire(trx: Kysely<Database>, task: store.TaskRow, f: FireInput) {
    return this.fires.fire(trx, task, f);
  }

  start(job: store.JobRow, actor: Actor = SCHEDULER_ACTOR, parent?: TraceContext) {
    return this.worker.start(job, actor, parent);
  }

  execute(job: store.JobRow) {
    return this.worker.execute(job);
  }

  runEnded(runId: string, ended?: RunFinished) {
    return this.settling.runEnded(runId, ended);
  }

  sweep() {
    return this.settling.sweep();
  }

  cancelRunning(tenantId: string, taskId: string, actor: Actor) {
    return this.settling.cancelRunning(tenantId, taskId, actor);
  }
}
