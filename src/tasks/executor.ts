import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { ProblemError } from '../http/errors.js';
import { newId, now } from '../ids.js';
import { isInjected, type RunFinished, type RunOutcome, type RunsService } from '../runs/service.js';
import { ACTIVE_STATUSES } from '../runs/store.js';
import type { RunError } from '../runs/views.js';
import type { Actor } from '../tenancy/permissions.js';
import { PRIORITY_RANK, type Priority } from './schemas.js';
import * as store from './store.js';

/**
 * The work of tasks: enqueueing jobs, fire decisions, executing a claimed job (an agent run or an
 * approval action), settling a job when its run ends (retry, fail, chain triggers), and the sweep
 * that makes all of it survive a process dying at any point. See docs/scheduling.md.
 */

export type JobKind = 'agent' | 'action';
export type JobReason = 'created' | 'approved' | 'manual' | 'retry' | 'schedule' | 'webhook' | 'event';
export type FireSource = 'schedule' | 'webhook' | 'event';

export type ActionHandler = (input: { tenantId: string; taskId: string; payload: Record<string, unknown>; decidedBy: Actor }) => Promise<void>;

/** The actor of work the platform starts on its own (dispatch, cron, triggers). */
export const SCHEDULER_ACTOR: Actor = { type: 'system', id: 'scheduler' };

export interface NewJob {
  kind: JobKind;
  reason: JobReason;
  input?: Record<string, unknown>;
  /** Waits while other work of the task is active (overlap policy `queue`). */
  serial?: boolean;
  /** Created already claimed by this process, to execute at once (run, retry, approve). */
  claimed?: boolean;
}

export interface Started {
  runId: string | null;
  conversationId: string | null;
  startedAt: string;
  /** Settles when the work has ended and the job is settled. */
  finished: Promise<void>;
}

export interface FireInput {
  source: FireSource;
  /** Unique per task: the same key never fires twice (cron time, signed delivery, source run). */
  key: string;
  scheduledFor?: string | null;
  input?: Record<string, unknown>;
  reason?: string | null;
  missed?: number;
  detail?: Record<string, unknown>;
}

export interface FireResult {
  fire: store.FireRow;
  duplicate: boolean;
  job: store.JobRow | null;
}

type Settled = 'completed' | 'failed' | 'cancelled';

/** How a run ended, as settling a job needs it. */
interface EndedRun {
  status: Settled;
  output: string;
  error: RunError | null;
}

/** A run's start found its job no longer claimed by this process: the start is abandoned. */
class JobNoLongerClaimed extends Error {}

const errorText = (e: RunError) => JSON.stringify(e);
const actorOf = (type: string | null, id: string | null): Actor => (type ? { type: type as Actor['type'], id } : SCHEDULER_ACTOR);

export class TaskExecutor {
  readonly actions = new Map<string, ActionHandler>();
  readonly rejections = new Map<string, ActionHandler>();
  /** Claimed jobs this process works on; their leases are renewed until the run starts or the action ends. */
  private readonly held = new Set<string>();
  private renewTimer: NodeJS.Timeout | undefined;
  /** Told when work was queued here, so the dispatcher wakes at once. */
  onEnqueued: () => void = () => {};

  constructor(
    private readonly db: Db,
    private readonly agents: AgentsService,
    private readonly runs: RunsService,
    /** Scheduler time (injectable clock): availability, back-off, fire decisions. */
    private readonly clock: () => Date,
    private readonly leaseMs: number,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Lease owner: the same id as this process's run leases. */
  get owner() {
    return this.runs.instanceId;
  }

  private leaseUntil() {
    // Leases measure whether a process is alive: real time, never the scheduler clock.
    return new Date(Date.now() + this.leaseMs).toISOString();
  }

  startRenewal() {
    this.renewTimer = setInterval(() => {
      if (!this.held.size) return;
      store.renewJobLeases(this.db.kysely, this.owner, [...this.held], this.leaseUntil()).catch((err) => this.log.error({ err }, 'task lease renewal failed'));
    }, this.leaseMs / 3);
    this.renewTimer.unref();
  }

  stopRenewal() {
    clearInterval(this.renewTimer);
  }

  // ---------------------------------------------------------------- queueing and firing

  newJob(task: store.TaskRow, job: NewJob): store.JobRow {
    const at = now();
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
      available_at: this.clock().toISOString(),
      lease_owner: job.claimed ? this.owner : null,
      lease_expires_at: job.claimed ? this.leaseUntil() : null,
      claimed_by: job.claimed ? this.owner : null,
      run_id: null,
      error: null,
      created_at: at,
      updated_at: at,
    };
  }

  /** Takes up to `limit` due jobs for this process's dispatcher, in claim order. */
  claimUpTo(limit: number) {
    return store.claimNextJobs(this.db.kysely, this.db.dialect, { owner: this.owner, now: this.clock().toISOString(), leaseUntil: this.leaseUntil() }, limit);
  }

  /** Takes the next due job, or null. */
  claimNext() {
    return this.claimUpTo(1).then((jobs) => jobs[0] ?? null);
  }

  /** Claims one specific queued job (a one-time task run by hand takes over its queued job). */
  claim(trx: Kysely<Database>, jobId: string) {
    return store.claimJob(trx, jobId, { owner: this.owner, now: now(), leaseUntil: this.leaseUntil() });
  }

  /**
   * Decides one fire of a scheduled or triggered task, inside the caller's transaction: records the
   * decision under its unique key (a key seen before is a duplicate and changes nothing) and queues
   * work unless the overlap policy says otherwise. The task row is written first, so concurrent fire
   * decisions for one task (other replicas) take turns.
   */
  async fire(trx: Kysely<Database>, task: store.TaskRow, f: FireInput): Promise<FireResult> {
    await store.updateTask(trx, task.id, { updated_at: now() });
    const seen = await store.findFire(trx, task.id, f.key);
    if (seen) return { fire: seen, duplicate: true, job: null };

    let decision: 'fired' | 'queued' | 'skipped' = 'fired';
    let reason = f.reason ?? null;
    let serial = false;
    if (task.status === 'awaiting_approval') {
      decision = 'skipped';
      reason = 'awaiting_approval';
    } else if (task.overlap_policy !== 'allow') {
      const active = await store.jobsOfTask(trx, task.id, store.ACTIVE_JOB_STATES);
      if (active.length && task.overlap_policy === 'queue' && !active.some((j) => j.state === 'queued')) {
        decision = 'queued';
        serial = true;
      } else if (active.length) {
        decision = 'skipped';
        reason = task.overlap_policy === 'queue' ? 'already_queued' : 'overlap';
      }
    }
    const job = decision === 'skipped' ? null : this.newJob(task, { kind: 'agent', reason: f.source, input: f.input, serial });
    const fire: store.FireRow = {
      id: newId(),
      tenant_id: task.tenant_id,
      task_id: task.id,
      source: f.source,
      fire_key: f.key,
      scheduled_for: f.scheduledFor ?? null,
      decided_at: this.clock().toISOString(),
      decision,
      reason,
      missed: f.missed ?? 0,
      job_id: job?.id ?? null,
      detail: JSON.stringify(f.detail ?? {}),
    };
    if (!(await store.insertFire(trx, fire))) return { fire: (await store.findFire(trx, task.id, f.key))!, duplicate: true, job: null };
    if (job) await store.insertJob(trx, job);
    return { fire, duplicate: false, job };
  }

  /**
   * Fires the tasks chained to the source job's task on `event`; the source run (or job) makes the
   * key. A deleted source task fires nothing.
   */
  private async fireEvent(trx: Kysely<Database>, source: Pick<store.JobRow, 'tenant_id' | 'task_id'>, event: 'task.completed' | 'task.failed', key: string, input: Record<string, unknown>) {
    const listeners = await store.eventListeners(trx, source.tenant_id, source.task_id, event);
    if (!listeners.length || !(await store.findTaskById(trx, source.task_id))) return false;
    let queued = false;
    for (const listener of listeners) {
      const r = await this.fire(trx, listener, { source: 'event', key: `event:${key}`, input: { event, taskId: source.task_id, ...input }, detail: { event, sourceTaskId: source.task_id, ...('runId' in input ? { sourceRunId: input.runId } : {}) } });
      queued ||= Boolean(r.job);
    }
    return queued;
  }

  // ---------------------------------------------------------------- executing

  /** Executes a job claimed by this process: starts its agent run, or performs its approval action. */
  async start(job: store.JobRow, actor: Actor = SCHEDULER_ACTOR): Promise<Started | null> {
    this.held.add(job.id);
    try {
      return job.kind === 'action' ? await this.performAction(job) : await this.startRun(job, actor);
    } finally {
      this.held.delete(job.id);
    }
  }

  /** For the dispatcher: executes the job and resolves when its work has ended. */
  async execute(job: store.JobRow): Promise<void> {
    try {
      const started = await this.start(job);
      await started?.finished;
    } catch (err) {
      if (!(err instanceof ProblemError)) throw err;
      // A run that could not start (agent paused, deleted...): already recorded on the job and task.
    }
  }

  private async startRun(job: store.JobRow, actor: Actor): Promise<Started | null> {
    const task = await store.findTaskById(this.db.kysely, job.task_id);
    if (!task) {
      await store.moveJob(this.db.kysely, job.id, ['claimed'], { state: 'cancelled', error: errorText({ code: 'task_deleted', message: 'the task was deleted' }), lease_owner: null, lease_expires_at: null, updated_at: now() });
      return null;
    }
    let runId: string;
    let conversationId: string;
    let startedAt: string;
    let queuedMore = false;
    let done: Promise<RunOutcome | null>;
    try {
      const agent = await this.agents.get(task.tenant_id, task.agent_id);
      const input = { ...(JSON.parse(task.input) as object), ...(JSON.parse(job.input) as object) };
      const handle = await this.runs.start({
        principal: { tenantId: task.tenant_id, actor },
        agent,
        kind: 'task',
        content: task.description,
        modelContext: Object.keys(input).length ? JSON.stringify(input) : undefined,
        taskId: task.id,
        // The job is marked running, and the task takes the run, in the run's own start; the job is
        // settled in the run's own end.
        onStart: async (trx, run) => {
          const r = await store.markJobRunning(trx, job.id, this.owner, run.runId, now());
          if (!Number(r.numUpdatedRows)) throw new JobNoLongerClaimed();
          await store.updateTask(trx, task.id, { status: 'running', last_run_id: run.runId, last_run_at: run.startedAt, last_error: null, updated_at: now() });
        },
        onFinish: async (trx, run) => {
          queuedMore = await this.settleInTransaction(trx, job, run.runId, { status: run.status, ...run.ended! });
        },
      });
      if (isInjected(handle)) throw new Error('a task run never joins a conversation');
      ({ runId, conversationId, startedAt, done } = handle);
    } catch (err) {
      // The job was cancelled (or its task deleted) while the run was starting: no run was created.
      if (err instanceof JobNoLongerClaimed) return null;
      // Automatic work refused for now (the tenant's concurrency limit, this replica shutting down) goes
      // back in the queue a little later instead of spending an attempt; a person's manual run gets the 429.
      if (actor === SCHEDULER_ACTOR && err instanceof ProblemError && (err.status === 429 || err.status === 503)) {
        const delaySeconds = Math.max(1, Number(err.headers?.['retry-after'] ?? 5));
        await store.moveJob(this.db.kysely, job.id, ['claimed'], {
          state: 'queued',
          attempts: Math.max(0, job.attempts - 1),
          available_at: new Date(Date.now() + delaySeconds * 1000).toISOString(),
          lease_owner: null,
          lease_expires_at: null,
          claimed_by: null,
          updated_at: now(),
        });
        return null;
      }
      let error: RunError;
      if (err instanceof ProblemError) {
        error = err.status === 404 ? { code: 'agent_not_found', message: 'the task’s agent no longer exists' } : { code: err.code, message: err.detail };
      } else {
        this.log.error({ err, taskId: task.id }, 'task run could not start');
        error = { code: 'internal_error', message: 'the run could not start; the error is in the server log' };
      }
      await this.failClaimed(job, task, error);
      throw err instanceof ProblemError && err.status === 404 ? new ProblemError(409, 'agent_not_found', 'the task’s agent no longer exists') : err;
    }
    // A run that ends here has settled its job in its end's transaction (onFinish) before `done`
    // resolves; one ended elsewhere (null) was settled there, or is looked up here once more.
    const finished = done
      .then((outcome) => {
        if (!outcome) return this.runEnded(runId);
        if (queuedMore) this.onEnqueued();
      })
      .catch((err) => this.log.error({ err, runId }, 'settling a task run failed'));
    return { runId, conversationId, startedAt, finished };
  }

  private async performAction(job: store.JobRow): Promise<Started | null> {
    const task = await store.findTaskById(this.db.kysely, job.task_id);
    if (!task) {
      await store.moveJob(this.db.kysely, job.id, ['claimed'], { state: 'cancelled', lease_owner: null, lease_expires_at: null, updated_at: now() });
      return null;
    }
    const startedAt = now();
    await store.updateTask(this.db.kysely, task.id, { status: 'running', last_run_at: startedAt, updated_at: startedAt });
    const handler = task.approval_action ? this.actions.get(task.approval_action) : undefined;
    try {
      if (!handler) throw new ProblemError(409, 'approval_action_unavailable', `no handler is registered for ${task.approval_action}`);
      await handler({
        tenantId: task.tenant_id,
        taskId: task.id,
        payload: task.approval_payload ? (JSON.parse(task.approval_payload) as Record<string, unknown>) : {},
        decidedBy: actorOf(task.decided_by_type, task.decided_by_id),
      });
    } catch (err) {
      const error = err instanceof ProblemError ? { code: err.code, message: err.detail } : { code: 'action_failed', message: err instanceof Error ? err.message : String(err) };
      if (!(err instanceof ProblemError)) this.log.warn({ err, taskId: task.id, action: task.approval_action }, 'approval action failed');
      await this.failClaimed(job, task, error);
      return { runId: null, conversationId: null, startedAt, finished: Promise.resolve() };
    }
    const at = now();
    await this.db.kysely.transaction().execute(async (trx) => {
      if (!(await store.moveJob(trx, job.id, ['claimed'], { state: 'done', lease_owner: null, lease_expires_at: null, error: null, updated_at: at }))) return;
      await store.updateTask(trx, task.id, { status: 'completed', last_error: null, updated_at: at });
    });
    return { runId: null, conversationId: null, startedAt, finished: Promise.resolve() };
  }

  // ---------------------------------------------------------------- settling

  /** When the attempt that just failed may be retried: back-off doubled per earlier attempt. */
  private retryAt(job: store.JobRow): string | null {
    if (job.attempts >= job.max_attempts) return null;
    const delay = job.backoff_seconds * 1000 * 2 ** Math.max(0, job.attempts - 1);
    return new Date(this.clock().getTime() + delay).toISOString();
  }

  /**
   * A claimed job failed without a run ending (the run could not start, the action failed, or the
   * claiming process died): queued again per the retry policy, or failed, and then so is the task.
   */
  private async failClaimed(job: store.JobRow, task: store.TaskRow | undefined, error: RunError, leaseExpiresAt?: string | null) {
    const retryAt = this.retryAt(job);
    const at = now();
    const queued = await this.db.kysely.transaction().execute(async (trx) => {
      const patch = retryAt
        ? { state: 'queued', available_at: retryAt, error: errorText(error), lease_owner: null, lease_expires_at: null, updated_at: at }
        : { state: 'failed', error: errorText(error), lease_owner: null, lease_expires_at: null, updated_at: at };
      if (!(await store.moveJob(trx, job.id, ['claimed'], patch, leaseExpiresAt === undefined ? {} : { leaseExpiresAt }))) return false;
      if (!task) return false;
      await store.updateTask(trx, task.id, { status: 'failed', last_error: errorText(error), updated_at: at });
      const chained = retryAt ? false : await this.fireEvent(trx, job, 'task.failed', `job:${job.id}`, { jobId: job.id, error });
      return Boolean(retryAt) || chained;
    });
    if (queued) this.onEnqueued();
  }

  /** Told by RunsService when any run ends (here or, for interrupted runs, elsewhere). */
  async runEnded(runId: string, ended?: RunFinished) {
    const job = await store.findJobByRun(this.db.kysely, runId);
    if (!job || job.state !== 'running') return;
    await this.settleRun(job, ended);
  }

  /**
   * The job's run has ended: done, cancelled, or failed (queued again per the retry policy). The
   * task takes the run's status, and tasks chained to it fire. A compare-and-set on the job makes
   * this happen once, whoever notices the end first (this process, the recovering one, the sweep).
   */
  private async settleRun(job: store.JobRow, finished?: RunFinished) {
    const runId = job.run_id!;
    const run = finished?.ended ? { status: finished.status, ...finished.ended } : await this.runs.get(job.tenant_id, runId);
    if ((ACTIVE_STATUSES as readonly string[]).includes(run.status)) return;
    const queued = await this.db.kysely.transaction().execute((trx) => this.settleInTransaction(trx, job, runId, run as EndedRun));
    if (queued) this.onEnqueued();
  }

  /** Settles the job of an ended run inside the caller's transaction; true when work was queued. */
  private async settleInTransaction(trx: Kysely<Database>, job: store.JobRow, runId: string, run: EndedRun): Promise<boolean> {
    const status = run.status;
    const retryAt = status === 'failed' ? this.retryAt(job) : null;
    const at = now();
    const error = run.error ? errorText(run.error) : null;
    const patch = retryAt
      ? { state: 'queued', run_id: null, available_at: retryAt, error, updated_at: at }
      : { state: status === 'completed' ? 'done' : status, error, updated_at: at };
    if (!(await store.moveJob(trx, job.id, ['running'], patch, { runId }))) return false;
    await store.recordRunEnd(trx, job.task_id, runId, status, error, at);
    let chained = false;
    if (status === 'completed') chained = await this.fireEvent(trx, job, 'task.completed', runId, { runId, output: run.output });
    if (status === 'failed' && !retryAt) chained = await this.fireEvent(trx, job, 'task.failed', runId, { runId, error: run.error });
    return Boolean(retryAt) || chained;
  }

  /**
   * The safety net behind the fast paths: claimed jobs whose process stopped renewing the lease are
   * retried or failed; running jobs whose run ended unheard of (the process died between the run's
   * terminal write and settling the job) are settled.
   */
  async sweep() {
    const realNow = new Date().toISOString();
    for (const job of await store.expiredClaims(this.db.kysely, realNow, 100)) {
      if (this.held.has(job.id)) continue;
      const task = await store.findTaskById(this.db.kysely, job.task_id);
      this.log.warn({ jobId: job.id, taskId: job.task_id }, 'task work lost its lease: its process stopped');
      await this.failClaimed(job, task, { code: 'interrupted', message: 'the process working on it stopped before it finished' }, job.lease_expires_at);
    }
    const quietSince = new Date(Date.now() - this.leaseMs).toISOString();
    for (const job of await store.runningJobs(this.db.kysely, quietSince, 500)) {
      await this.settleRun(job).catch((err) => this.log.error({ err, jobId: job.id }, 'settling a task job failed'));
    }
  }

  /** Cancels a task's queued and claimed jobs inside the caller's transaction. */
  async cancelPending(trx: Kysely<Database>, taskId: string, error: RunError, onlyRetries = false) {
    const jobs = await store.jobsOfTask(trx, taskId, ['queued', 'claimed']);
    let n = 0;
    for (const job of jobs) {
      if (onlyRetries && !(job.state === 'queued' && job.attempts > 0)) continue;
      // An approval action under way is not interrupted: approving was the decision.
      if (job.kind === 'action' && job.state === 'claimed') continue;
      if (await store.moveJob(trx, job.id, [job.state], { state: 'cancelled', error: errorText(error), lease_owner: null, lease_expires_at: null, updated_at: now() })) n++;
    }
    return n;
  }

  /** Stops a task's running runs (here or elsewhere) and settles their jobs. */
  async cancelRunning(tenantId: string, taskId: string, actor: Actor) {
    const jobs = await store.jobsOfTask(this.db.kysely, taskId, ['running']);
    for (const job of jobs) {
      try {
        await this.runs.cancel({ tenantId, actor }, job.run_id!);
      } catch (err) {
        if (!(err instanceof ProblemError && err.code === 'run_not_active')) throw err;
      }
      await this.runEnded(job.run_id!);
    }
  }
}
