import type { FastifyBaseLogger } from 'fastify';
import type { AgentsService } from '../agents/service.js';
import { type Clock, systemClock } from '../clock.js';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import type { IdempotencyService } from '../idempotency/service.js';
import { loadMasterKey } from '../identity/master-key.js';
import { SecretBox } from '../identity/secret-box.js';
import { newId, now } from '../ids.js';
import { executable, type RunFinished, type RunsService } from '../runs/service.js';
import { Dispatcher } from '../scheduler/dispatcher.js';
import { Loop } from '../scheduler/loop.js';
import type { Principal } from '../tenancy/permissions.js';
import { ApprovalTasks } from './approval-tasks.js';
import type { ApprovalActions, ApprovalGateway } from './approvals.js';
import { TaskExecutor } from './executor.js';
import { auditTask, TaskLookup } from './lookup.js';
import { ManualRuns } from './manual-runs.js';
import { checkCreateBody, firstFire, isEventTrigger, taskRowFromBody } from './new-task.js';
import { type CronObserver, CronFiring } from './schedules.js';
import type { CreateTaskBody, Task } from './schemas.js';
import * as store from './store/index.js';
import { fireView, taskSummary } from './views.js';
import { newWebhookSecret } from './webhook-signatures.js';
import { WebhookDeliveries, type Delivery } from './webhooks.js';
import type { Tracing } from '../tracing/tracing.js';
import type { TraceContext } from '../tracing/tracing.js';

const RECENT_RUNS = 10;
const RECENT_FIRES = 20;

export interface Paging {
  page: number;
  limit: number;
}

export interface TasksServiceOptions {
  db: Db;
  agents: AgentsService;
  runs: RunsService;
  idempotency: IdempotencyService;
  config: Pick<Config, 'tasks' | 'runLeaseMs' | 'publicBaseUrl' | 'masterKey' | 'dataDir'>;
  log: FastifyBaseLogger;
  /** Spans of task fires and jobs (src/tracing/); absent, nothing is traced. */
  tracing?: Tracing;
  /** Cron times, queue eligibility, back-off and webhook signature ages (default: real time). */
  clock?: Clock;
  /** Told of each claimed cron time (the metrics); absent, nothing is observed. */
  cronObserver?: CronObserver;
  /** What approving (and rejecting) a task with each action does: other domains' actions (skills'); absent, none. */
  approvalActions?: ApprovalActions;
}

/**
 * Tasks (spec 2.4, 3.3, 4.3; CONTRACT.md "Tasks"), as the routes and other domains see them: reading,
 * creating, cancelling and deleting here; runs started by hand (manual-runs.ts), approvals
 * (approval-tasks.ts, the ApprovalGateway), webhook deliveries (webhooks.ts); and the background work
 * of this process: the dispatcher, cron firing (schedules.ts) and the sweep, over the task work
 * (executor.ts).
 */
export class TasksService implements ApprovalGateway {
  private readonly clock: Clock;
  readonly executor: TaskExecutor;
  readonly cron: CronFiring;
  readonly dispatcher: Dispatcher<store.JobRow>;
  private readonly db: Db;
  private readonly runs: RunsService;
  private readonly agents: AgentsService;
  private readonly config: TasksServiceOptions['config'];
  private readonly log: FastifyBaseLogger;
  private readonly secrets: SecretBox;
  private readonly lookup: TaskLookup;
  private readonly manual: ManualRuns;
  private readonly approvals: ApprovalTasks;
  private readonly webhooks: WebhookDeliveries;
  private readonly loops: Loop[] = [];
  private readonly idempotency: IdempotencyService;

  constructor({
    db,
    agents,
    runs,
    idempotency,
    config,
    log,
    tracing,
    clock = systemClock,
    cronObserver,
    approvalActions = {},
  }: TasksServiceOptions) {
    this.clock = clock;
    this.db = db;
    this.idempotency = idempotency;
    this.agents = agents;
    this.runs = runs;
    this.config = config;
    this.log = log;
    const actions = new Map(Object.entries(approvalActions));
    this.executor = new TaskExecutor({ db, agents, runs, clock, leaseMs: config.runLeaseMs, log, tracing, actions });
    this.cron = new CronFiring({ db, executor: this.executor, clock, graceMs: config.tasks.misfireGraceMs, log, observer: cronObserver });
    this.dispatcher = new Dispatcher({
      workers: config.tasks.workers,
      pollMs: config.tasks.pollMs,
      claim: (limit) => this.executor.claimUpTo(limit),
      execute: (job) => this.executor.execute(job),
      log,
    });
    this.executor.onEnqueued = () => this.dispatcher.wake();
    this.secrets = new SecretBox(loadMasterKey(config), 'webhook-secrets');
    this.lookup = new TaskLookup(db, config.publicBaseUrl);
    const executor = this.executor;
    this.manual = new ManualRuns({ db, agents, executor, lookup: this.lookup });
    this.approvals = new ApprovalTasks({ db, agents, executor, lookup: this.lookup, clock, log });
    this.webhooks = new WebhookDeliveries({ db, executor, secrets: this.secrets, clock, log });
  }

  /** A run ended (a finished listener of the runs service): a task's run settles its job. */
  async runFinished(run: RunFinished): Promise<void> {
    // Runs that ended here settled their job in their own end's transaction (worker.ts, startRun).
    if (run.taskId && !run.finishedInTransaction) await this.executor.runEnded(run.runId, run);
  }

  // ---------------------------------------------------------------- background

  /** Starts the dispatcher (TASK_WORKERS > 0), cron firing (TASK_SCHEDULER=on) and the sweep. */
  startBackground() {
    const { workers, pollMs, scheduler } = this.config.tasks;
    this.executor.startRenewal();
    // Expired idempotency keys go with the same sweep: one loop per process for the housekeeping.
    const sweep = new Loop(
      'task sweep',
      this.config.runLeaseMs / 2,
      async () => void (await Promise.all([this.executor.sweep(), this.idempotency.sweep()])),
      this.log,
    );
    this.loops.push(sweep);
    sweep.start();
    if (scheduler) {
      const cron = new Loop('cron scheduler', pollMs, async () => void (await this.cron.tick()), this.log);
      this.loops.push(cron);
      cron.start();
    }
    if (workers > 0) this.dispatcher.start();
  }

  async stop() {
    await Promise.all([this.executor.stopRenewal(), ...this.loops.map((l) => l.stop()), this.dispatcher.stop()]);
    this.loops.length = 0;
  }

  // ---------------------------------------------------------------- reading

  async list(tenantId: string, { page, limit, ...filter }: store.TaskFilter & Paging) {
    const { rows, total } = await store.listTasks(this.db.kysely, { tenantId, filter, limit, offset: (page - 1) * limit });
    return { tasks: rows.map(taskSummary), total, page, limit };
  }

  get(tenantId: string, id: string): Promise<Task> {
    return this.lookup.get(tenantId, id);
  }

  /** The task with its recent runs, the latest completed output and its recent fire decisions. */
  async details(tenantId: string, id: string) {
    const row = await this.lookup.row(tenantId, id);
    const [recent, latestCompleted, fires] = await Promise.all([
      this.runs.listForTask(tenantId, { taskId: id }, 1, RECENT_RUNS),
      this.runs.listForTask(tenantId, { taskId: id, status: 'completed' }, 1, 1),
      store.listFires(this.db.kysely, { tenantId, taskId: id, limit: RECENT_FIRES, offset: 0 }),
    ]);
    return {
      ...this.lookup.view(row),
      output: latestCompleted.runs[0]?.output ?? null,
      runs: recent.runs,
      runCount: recent.total,
      fires: fires.rows.map(fireView),
    };
  }

  async listRuns(tenantId: string, id: string, { page, limit }: Paging) {
    await this.lookup.row(tenantId, id);
    return this.runs.listForTask(tenantId, { taskId: id }, page, limit);
  }

  async listFires(tenantId: string, id: string, { page, limit }: Paging) {
    await this.lookup.row(tenantId, id);
    const { rows, total } = await store.listFires(this.db.kysely, { tenantId, taskId: id, limit, offset: (page - 1) * limit });
    return { fires: rows.map(fireView), total, page, limit };
  }

  /** A task run's details; runs of deleted tasks stay readable. */
  async getRun(tenantId: string, runId: string) {
    const run = await this.runs.get(tenantId, runId);
    if (!run.taskId) throw new NotFound('task run');
    return run;
  }

  async pendingApproval(tenantId: string, { page, limit }: Paging) {
    const { rows, total } = await store.listPendingApproval(this.db.kysely, { tenantId, limit, offset: (page - 1) * limit });
    return { tasks: rows.map((r) => this.lookup.view(r)), total, page, limit };
  }

  /** The work queue across tenants, for the metrics: jobs queued and running, the oldest due job's wait, tasks awaiting approval. */
  async queueStats() {
    const at = this.clock.now();
    const [jobs, awaitingApproval] = await Promise.all([
      store.queueStats(this.db.kysely, new Date(at).toISOString()),
      store.countAwaitingApproval(this.db.kysely),
    ]);
    const lagSeconds = jobs.oldestDueAt ? Math.max(0, (at - Date.parse(jobs.oldestDueAt)) / 1000) : 0;
    return { queued: jobs.queued, running: jobs.running, lagSeconds, awaitingApproval };
  }

  // ---------------------------------------------------------------- changing

  /**
   * Creates a task; with an Idempotency-Key an earlier request with the same body already used, answers
   * the task that request created (`replayed`) instead of creating another.
   */
  async createOnce(
    principal: Principal,
    input: CreateTaskBody,
    key: string | undefined,
    trace?: TraceContext,
  ): Promise<{ task: Task; replayed: boolean }> {
    if (key === undefined) return { task: await this.create(principal, input, trace), replayed: false };
    const tenantId = principal.tenantId;
    const claim = await this.idempotency.claim(tenantId, key, { method: 'POST', route: '/api/v1/tasks', body: input });
    if (claim.replay?.taskId) return { task: await this.get(tenantId, claim.replay.taskId), replayed: true };
    try {
      const task = await this.create(principal, input, trace);
      await this.idempotency.record(tenantId, claim, { status: 201, taskId: task.id });
      return { task, replayed: false };
    } catch (err) {
      await this.idempotency.release(tenantId, claim);
      throw err;
    }
  }

  /** `trace`: traced, the creating request's span, which a one-time task's job links to. */
  async create(principal: Principal, input: CreateTaskBody, trace?: TraceContext): Promise<Task> {
    const type = input.type ?? 'one_time';
    const errors = checkCreateBody(input, type);
    if (errors.length) throw new InvalidInput(`${errors[0].path} ${errors[0].message}`, errors);
    const agent = await this.agents.get(principal.tenantId, input.agentId);
    executable(agent);
    const isEvent = isEventTrigger(input, type);
    if (isEvent && !(await store.findTask(this.db.kysely, principal.tenantId, input.trigger!.taskId!))) {
      throw new InvalidInput('body.trigger.taskId names no task in this tenant', [
        { path: 'body.trigger.taskId', message: 'names no task in this tenant' },
      ]);
    }
    const secret = type === 'triggered' && !isEvent ? newWebhookSecret() : null;
    const id = newId();
    const sealedSecret = secret ? this.secrets.seal(secret, id) : null;
    const row = taskRowFromBody({ id, principal, agent, input, type, sealedSecret, at: now() });
    const requiresApproval = row.requires_approval === 1;
    if (!requiresApproval) row.next_run_at = firstFire(row, new Date(this.clock.now()));
    let job: store.JobRow | null = null;
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.insertTask(trx, row);
      if (type === 'one_time' && !requiresApproval) {
        job = this.executor.newJob(row, { kind: 'agent', reason: 'created', trace });
        await store.insertJob(trx, job);
      }
      const detail = { name: row.name, type, agentId: agent.id, requiresApproval };
      await auditTask(trx, { who: principal, action: 'task.created', taskId: row.id, detail });
    });
    if (job) this.executor.onEnqueued();
    const task = this.lookup.view({ ...row, queued_at: job ? (job as store.JobRow).available_at : null });
    if (secret && task.trigger?.type === 'webhook') task.trigger.secret = secret;
    return task;
  }

  /**
   * Cancels the task's work: queued work is dropped, running runs stop at their next tool boundary.
   * A scheduled or triggered task keeps its schedule or trigger (delete stops those).
   */
  async cancel(principal: Principal, id: string): Promise<Task> {
    const task = await this.lookup.row(principal.tenantId, id);
    const hasQueued = task.queued_at !== null;
    if (task.status !== 'pending' && task.status !== 'running' && !hasQueued) {
      throw new Conflict('task_not_pending_or_running', `only a pending or running task can be cancelled; this one is ${task.status}`);
    }
    await this.db.kysely.transaction().execute(async (trx) => {
      const dropped = await this.executor.cancelPending(trx, task.id, { error: { code: 'cancelled', message: 'the task was cancelled' } });
      await store.updateTask(trx, task.id, { status: 'cancelled', updated_at: now() });
      await auditTask(trx, { who: principal, action: 'task.cancelled', taskId: task.id, detail: { droppedJobs: dropped } });
    });
    await this.executor.cancelRunning(principal.tenantId, task.id, principal.actor);
    return this.get(principal.tenantId, id);
  }

  /** Deletes the task: no more fires or queued work, running runs stop; its runs stay readable. */
  async delete(principal: Principal, id: string): Promise<void> {
    const task = await this.lookup.row(principal.tenantId, id);
    await this.db.kysely.transaction().execute(async (trx) => {
      await this.executor.cancelPending(trx, task.id, { error: { code: 'task_deleted', message: 'the task was deleted' } });
      const r = await store.updateTask(trx, task.id, { deleted_at: now(), next_run_at: null, updated_at: now() });
      if (!Number(r.numUpdatedRows)) throw new NotFound('task');
      await auditTask(trx, { who: principal, action: 'task.deleted', taskId: task.id, detail: { name: task.name } });
    });
    await this.executor.cancelRunning(principal.tenantId, task.id, principal.actor);
  }

  // ---------------------------------------------------------------- delegated

  /** `trace`, here and below: traced, the request's span (the parent of the job it starts, or what its job links to). */
  run(principal: Principal, id: string, override: Record<string, unknown> | undefined, trace?: TraceContext) {
    return this.manual.run(principal, id, override, trace);
  }

  retry(principal: Principal, id: string, trace?: TraceContext) {
    return this.manual.retry(principal, id, trace);
  }

  approve(principal: Principal, id: string, trace?: TraceContext) {
    return this.approvals.approve(principal, id, trace);
  }

  reject(principal: Principal, id: string) {
    return this.approvals.reject(principal, id);
  }

  createApprovalTask(input: Parameters<ApprovalGateway['createApprovalTask']>[0]) {
    return this.approvals.createApprovalTask(input);
  }

  webhook(delivery: Delivery) {
    return this.webhooks.deliver(delivery);
  }
}
