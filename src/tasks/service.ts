import { SecretBox } from '../identity/secret-box.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Agent } from '../agents/schemas.js';
import type { AgentsService } from '../agents/service.js';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { ProblemError, badRequest, conflict, notFound, type FieldError } from '../http/errors.js';
import { newId, now } from '../ids.js';
import { executable, type RunsService } from '../runs/service.js';
import { systemClock, type Clock } from '../scheduler/clock.js';
import { cronProblem, isTimeZone, nextFire } from '../scheduler/cron.js';
import { Dispatcher } from '../scheduler/dispatcher.js';
import { Loop } from '../scheduler/loop.js';
import { recordAudit } from '../tenancy/audit.js';
import type { Actor, Principal } from '../tenancy/permissions.js';
import type { ApprovalGateway } from './approvals.js';
import { TaskExecutor, type ActionHandler, type Started } from './executor.js';
import { CronFiring } from './schedules.js';
import type { CreateTaskBody, Task } from './schemas.js';
import { loadMasterKey } from '../identity/master-key.js';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, checkSignature, newWebhookSecret } from './webhook-signatures.js';
import * as store from './store.js';
import { fireView, taskSummary, taskView } from './views.js';

type Who = Pick<Principal, 'tenantId' | 'actor'>;

const WEBHOOK_ACTOR: Actor = { type: 'system', id: 'webhook' };

const RECENT_RUNS = 10;
const RECENT_FIRES = 20;

/**
 * Tasks (spec 2.4, 3.3, 4.3; CONTRACT.md "Tasks"): the API's rules and transitions, approvals (the
 * ApprovalGateway other domains use), webhook deliveries, and the background work of this process
 * (dispatcher, cron, sweep). The work itself is in executor.ts, cron decisions in schedules.ts.
 */
export class TasksService implements ApprovalGateway {
  private clock: Clock = systemClock;
  readonly executor: TaskExecutor;
  readonly cron: CronFiring;
  readonly dispatcher: Dispatcher<store.JobRow>;
  private readonly secrets: SecretBox;
  private readonly loops: Loop[] = [];

  constructor(
    private readonly db: Db,
    private readonly agents: AgentsService,
    private readonly runs: RunsService,
    private readonly config: Pick<Config, 'tasks' | 'runLeaseMs' | 'publicBaseUrl' | 'masterKey' | 'dataDir'>,
    private readonly log: FastifyBaseLogger,
  ) {
    const time = () => this.clock.now();
    this.executor = new TaskExecutor(db, agents, runs, time, config.runLeaseMs, log);
    this.cron = new CronFiring(db, this.executor, time, config.tasks.misfireGraceMs, log);
    this.dispatcher = new Dispatcher({
      workers: config.tasks.workers,
      pollMs: config.tasks.pollMs,
      claim: (limit) => this.executor.claimUpTo(limit),
      execute: (job) => this.executor.execute(job),
      log,
    });
    this.executor.onEnqueued = () => this.dispatcher.wake();
    this.secrets = new SecretBox(loadMasterKey(config), 'webhook-secrets');
    // Runs that ended here settled their job in their own end's transaction (executor.startRun).
    runs.onRunFinished((run) => (run.taskId && !run.finishedInTransaction ? this.executor.runEnded(run.runId, run) : undefined));
  }

  /** Replaces the scheduler clock (tests, simulations). */
  useClock(clock: Clock) {
    this.clock = clock;
  }

  // ---------------------------------------------------------------- background

  /** Starts the dispatcher (TASK_WORKERS > 0), cron firing (TASK_SCHEDULER=on) and the sweep. */
  startBackground() {
    const { workers, pollMs, scheduler } = this.config.tasks;
    this.executor.startRenewal();
    const sweep = new Loop('task sweep', this.config.runLeaseMs / 2, () => this.executor.sweep(), this.log);
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
    this.executor.stopRenewal();
    await Promise.all([...this.loops.map((l) => l.stop()), this.dispatcher.stop()]);
    this.loops.length = 0;
  }

  // ---------------------------------------------------------------- reading

  private view(row: store.TaskRow & { queued_at?: string | null }): Task {
    return taskView(row, this.config.publicBaseUrl);
  }

  private async row(tenantId: string, id: string) {
    const row = await store.findTask(this.db.kysely, tenantId, id);
    if (!row) throw notFound('task');
    return row;
  }

  async list(tenantId: string, filter: store.TaskFilter, page: number, limit: number) {
    const { rows, total } = await store.listTasks(this.db.kysely, tenantId, filter, limit, (page - 1) * limit);
    return { tasks: rows.map(taskSummary), total, page, limit };
  }

  async get(tenantId: string, id: string): Promise<Task> {
    return this.view(await this.row(tenantId, id));
  }

  /** The task with its recent runs, the latest completed output and its recent fire decisions. */
  async details(tenantId: string, id: string) {
    const row = await this.row(tenantId, id);
    const [recent, latestCompleted, fires] = await Promise.all([
      this.runs.listForTask(tenantId, id, 1, RECENT_RUNS),
      this.runs.listForTask(tenantId, id, 1, 1, 'completed'),
      store.listFires(this.db.kysely, tenantId, id, RECENT_FIRES, 0),
    ]);
    return {
      ...this.view(row),
      output: latestCompleted.runs[0]?.output ?? null,
      runs: recent.runs,
      runCount: recent.total,
      fires: fires.rows.map(fireView),
    };
  }

  async listRuns(tenantId: string, id: string, page: number, limit: number) {
    await this.row(tenantId, id);
    return this.runs.listForTask(tenantId, id, page, limit);
  }

  async listFires(tenantId: string, id: string, page: number, limit: number) {
    await this.row(tenantId, id);
    const { rows, total } = await store.listFires(this.db.kysely, tenantId, id, limit, (page - 1) * limit);
    return { fires: rows.map(fireView), total, page, limit };
  }

  /** A task run's details; runs of deleted tasks stay readable. */
  async getRun(tenantId: string, runId: string) {
    const run = await this.runs.get(tenantId, runId);
    if (!run.taskId) throw notFound('task run');
    return run;
  }

  async pendingApproval(tenantId: string, page: number, limit: number) {
    const { rows, total } = await store.listPendingApproval(this.db.kysely, tenantId, limit, (page - 1) * limit);
    return { tasks: rows.map((r) => this.view(r)), total, page, limit };
  }

  // ---------------------------------------------------------------- creating

  private checkCreate(input: CreateTaskBody, type: string): FieldError[] {
    const errors: FieldError[] = [];
    const refuse = (field: string, message: string) => errors.push({ path: `body.${field}`, message });
    const timezone = input.timezone ?? 'UTC';
    if (type === 'scheduled') {
      if (input.schedule === undefined) refuse('schedule', 'is required for scheduled tasks');
      if (!isTimeZone(timezone)) refuse('timezone', 'must be an IANA time zone such as Europe/Paris or UTC');
      else if (input.schedule !== undefined) {
        const problem = cronProblem(input.schedule, timezone);
        if (problem) refuse('schedule', problem);
      }
    } else {
      for (const field of ['schedule', 'timezone', 'misfirePolicy'] as const) {
        if (input[field] !== undefined) refuse(field, 'applies to scheduled tasks only');
      }
    }
    if (type !== 'one_time' && input.dueAt !== undefined) refuse('dueAt', 'applies to one-time tasks only');
    if (type === 'one_time' && input.overlapPolicy !== undefined) refuse('overlapPolicy', 'applies to scheduled and triggered tasks only');
    if (type === 'triggered') {
      const t = input.trigger;
      if (!t) refuse('trigger', 'is required for triggered tasks: {"type":"webhook"} or {"event":"task.completed","taskId":"..."}');
      else if (t.type === 'webhook') {
        if (t.event !== undefined) refuse('trigger.event', 'applies to event triggers only');
        if (t.taskId !== undefined) refuse('trigger.taskId', 'applies to event triggers only');
      } else {
        if (t.event === undefined) refuse('trigger.event', 'is required for event triggers');
        if (t.taskId === undefined) refuse('trigger.taskId', 'is required for event triggers');
      }
    } else if (input.trigger !== undefined) {
      refuse('trigger', 'applies to triggered tasks only');
    }
    return errors;
  }

  async create(principal: Principal, input: CreateTaskBody): Promise<Task> {
    const type = input.type ?? 'one_time';
    const errors = this.checkCreate(input, type);
    if (errors.length) throw badRequest(`${errors[0].path} ${errors[0].message}`, errors);
    const agent = await this.agents.get(principal.tenantId, input.agentId);
    executable(agent);
    const trigger = input.trigger;
    const isEvent = type === 'triggered' && trigger?.type !== 'webhook';
    if (isEvent && !(await store.findTask(this.db.kysely, principal.tenantId, trigger!.taskId!))) {
      throw badRequest('body.trigger.taskId names no task in this tenant', [{ path: 'body.trigger.taskId', message: 'names no task in this tenant' }]);
    }
    const secret = type === 'triggered' && !isEvent ? newWebhookSecret() : null;
    const requiresApproval = input.requiresApproval ?? false;
    const at = now();
    const timezone = type === 'scheduled' ? (input.timezone ?? 'UTC') : null;
    const id = newId();
    const row = store.newTaskRow({
      id,
      tenant_id: principal.tenantId,
      agent_id: agent.id,
      app_id: input.appId ?? agent.appId,
      team_id: input.teamId ?? null,
      name: input.name,
      description: input.description,
      type,
      schedule: type === 'scheduled' ? input.schedule!.trim().split(/\s+/).join(' ') : null,
      timezone,
      priority: input.priority ?? 'medium',
      due_at: input.dueAt ? new Date(input.dueAt).toISOString() : null,
      input: JSON.stringify(input.input ?? {}),
      requires_approval: requiresApproval ? 1 : 0,
      status: requiresApproval ? 'awaiting_approval' : 'pending',
      misfire_policy: input.misfirePolicy ?? 'skip',
      overlap_policy: input.overlapPolicy ?? 'skip',
      max_attempts: input.retryPolicy?.maxAttempts ?? 1,
      backoff_seconds: input.retryPolicy?.backoffSeconds ?? 10,
      trigger_type: type === 'triggered' ? (isEvent ? 'event' : 'webhook') : null,
      trigger_event: isEvent ? trigger!.event! : null,
      trigger_task_id: isEvent ? trigger!.taskId! : null,
      webhook_secret: secret ? this.secrets.seal(secret, id) : null,
      requested_by_type: requiresApproval ? principal.actor.type : null,
      requested_by_id: requiresApproval ? principal.actor.id : null,
      created_by: principal.actor.id,
      created_at: at,
    });
    if (!requiresApproval) row.next_run_at = this.firstFire(row);
    let job: store.JobRow | null = null;
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.insertTask(trx, row);
      if (type === 'one_time' && !requiresApproval) {
        job = this.executor.newJob(row, { kind: 'agent', reason: 'created' });
        await store.insertJob(trx, job);
      }
      await this.audit(trx, principal, 'task.created', row.id, { name: row.name, type, agentId: agent.id, requiresApproval });
    });
    if (job) this.executor.onEnqueued();
    const task = this.view({ ...row, queued_at: job ? (job as store.JobRow).available_at : null });
    if (secret && task.trigger?.type === 'webhook') task.trigger.secret = secret;
    return task;
  }

  /** The first cron time of a scheduled task, from the scheduler clock. */
  private firstFire(row: store.TaskRow): string | null {
    if (row.type !== 'scheduled') return null;
    return nextFire(row.schedule!, row.timezone ?? 'UTC', this.clock.now())?.toISOString() ?? null;
  }

  // ---------------------------------------------------------------- running

  private async agentFor(task: store.TaskRow): Promise<Agent> {
    let agent: Agent;
    try {
      agent = await this.agents.get(task.tenant_id, task.agent_id);
    } catch (err) {
      if (err instanceof ProblemError && err.status === 404) throw conflict('agent_not_found', 'the task’s agent no longer exists');
      throw err;
    }
    executable(agent);
    return agent;
  }

  private started(taskId: string, s: Started | null) {
    if (!s) throw notFound('task');
    return { runId: s.runId, status: 'running', startedAt: s.startedAt, taskId, conversationId: s.conversationId };
  }

  /**
   * Starts a run now, outside the worker pool (it was asked for). A one-time task's queued work is
   * taken over rather than left to run again later. Overlap policies govern automatic fires only.
   */
  async run(principal: Principal, id: string, override: Record<string, unknown> | undefined) {
    const task = await this.row(principal.tenantId, id);
    if (task.status === 'awaiting_approval') throw conflict('task_awaiting_approval', 'the task awaits approval; approve it first');
    if (task.approval_action) throw conflict('task_not_runnable', 'an approval task performs its action when approved; retry it if that failed');
    await this.agentFor(task);
    const job = await this.db.kysely.transaction().execute(async (trx) => {
      let claimed: store.JobRow | undefined;
      if (task.type === 'one_time') {
        for (const queued of await store.jobsOfTask(trx, task.id, ['queued'])) {
          claimed = await this.executor.claim(trx, queued.id);
          if (claimed) break;
        }
      }
      if (claimed && override) {
        const input = JSON.stringify({ ...(JSON.parse(claimed.input) as object), ...override });
        await trx.updateTable('task_jobs').set({ input }).where('id', '=', claimed.id).execute();
        claimed = { ...claimed, input };
      }
      if (!claimed) {
        claimed = this.executor.newJob(task, { kind: 'agent', reason: 'manual', input: override, claimed: true });
        await store.insertJob(trx, claimed);
      }
      await this.audit(trx, principal, 'task.run_requested', task.id, { jobId: claimed.id, input: override ? Object.keys(override) : [] });
      return claimed;
    });
    return this.started(task.id, await this.executor.start(job, principal.actor));
  }

  /** Runs a failed task again with the same configuration (and the failed run's input); a pending automatic retry is superseded. */
  async retry(principal: Principal, id: string) {
    const task = await this.row(principal.tenantId, id);
    if (task.status !== 'failed') throw conflict('task_not_failed', `only a failed task can be retried; this one is ${task.status}`);
    const isAction = Boolean(task.approval_action);
    if (!isAction) await this.agentFor(task);
    const lastJob = task.last_run_id ? await store.findJobByRun(this.db.kysely, task.last_run_id) : undefined;
    const job = await this.db.kysely.transaction().execute(async (trx) => {
      const moved = await store.transitionTask(trx, task.id, ['failed'], { status: 'pending', updated_at: now() });
      if (!Number(moved.numUpdatedRows)) throw conflict('task_not_failed', 'the task changed state meanwhile');
      const superseded = await this.executor.cancelPending(trx, task.id, { code: 'superseded', message: 'superseded by a manual retry' }, true);
      const job = this.executor.newJob(task, {
        kind: isAction ? 'action' : 'agent',
        reason: 'retry',
        input: lastJob ? (JSON.parse(lastJob.input) as Record<string, unknown>) : undefined,
        claimed: true,
      });
      await store.insertJob(trx, job);
      await this.audit(trx, principal, 'task.retried', task.id, { jobId: job.id, superseded });
      return job;
    });
    const started = await this.executor.start(job, principal.actor);
    if (isAction) {
      const after = await this.get(principal.tenantId, id);
      return { ...this.started(task.id, started), status: after.status };
    }
    return this.started(task.id, started);
  }

  /**
   * Cancels the task's work: queued work is dropped, running runs stop at their next tool boundary.
   * A scheduled or triggered task keeps its schedule or trigger (delete stops those).
   */
  async cancel(principal: Principal, id: string): Promise<Task> {
    const task = await this.row(principal.tenantId, id);
    const hasQueued = task.queued_at !== null;
    if (task.status !== 'pending' && task.status !== 'running' && !hasQueued) {
      throw conflict('task_not_pending_or_running', `only a pending or running task can be cancelled; this one is ${task.status}`);
    }
    await this.db.kysely.transaction().execute(async (trx) => {
      const dropped = await this.executor.cancelPending(trx, task.id, { code: 'cancelled', message: 'the task was cancelled' });
      await store.updateTask(trx, task.id, { status: 'cancelled', updated_at: now() });
      await this.audit(trx, principal, 'task.cancelled', task.id, { droppedJobs: dropped });
    });
    await this.executor.cancelRunning(principal.tenantId, task.id, principal.actor);
    return this.get(principal.tenantId, id);
  }

  /** Deletes the task: no more fires or queued work, running runs stop; its runs stay readable. */
  async delete(principal: Principal, id: string): Promise<void> {
    const task = await this.row(principal.tenantId, id);
    await this.db.kysely.transaction().execute(async (trx) => {
      await this.executor.cancelPending(trx, task.id, { code: 'task_deleted', message: 'the task was deleted' });
      const r = await store.updateTask(trx, task.id, { deleted_at: now(), next_run_at: null, updated_at: now() });
      if (!Number(r.numUpdatedRows)) throw notFound('task');
      await this.audit(trx, principal, 'task.deleted', task.id, { name: task.name });
    });
    await this.executor.cancelRunning(principal.tenantId, task.id, principal.actor);
  }

  // ---------------------------------------------------------------- approvals

  /**
   * Approve: the decision is recorded with who and when. A task with an action performs it now
   * (through the registered handler, instead of running the agent) and answers completed or failed;
   * any other task becomes pending: a one-time task is queued, a scheduled one gets its first cron
   * time, a triggered one starts listening.
   */
  async approve(principal: Principal, id: string): Promise<Task> {
    const task = await this.row(principal.tenantId, id);
    if (task.status !== 'awaiting_approval') throw conflict('task_not_awaiting_approval', `the task is ${task.status}, not awaiting approval`);
    const action = task.approval_action;
    if (action && !this.executor.actions.has(action)) {
      throw conflict('approval_action_unavailable', `nothing on this server can perform ${action}; the task stays awaiting approval`);
    }
    const at = now();
    const decided = { ...task, decision: 'approved', decided_by_type: principal.actor.type, decided_by_id: principal.actor.id, decided_at: at };
    const job = await this.db.kysely.transaction().execute(async (trx) => {
      const r = await store.transitionTask(trx, task.id, ['awaiting_approval'], {
        status: action ? 'running' : 'pending',
        decision: 'approved',
        decided_by_type: principal.actor.type,
        decided_by_id: principal.actor.id,
        decided_at: at,
        next_run_at: this.firstFire(task),
        updated_at: at,
      });
      if (!Number(r.numUpdatedRows)) throw conflict('task_not_awaiting_approval', 'the task was decided meanwhile');
      let job: store.JobRow | null = null;
      if (action || task.type === 'one_time') {
        job = this.executor.newJob(decided, { kind: action ? 'action' : 'agent', reason: 'approved', claimed: Boolean(action) });
        await store.insertJob(trx, job);
      }
      await this.audit(trx, principal, 'task.approved', task.id, { action });
      return job;
    });
    if (job && action) await this.executor.start(job, principal.actor);
    else if (job) this.executor.onEnqueued();
    return this.get(principal.tenantId, id);
  }

  /** Reject: cancelled, with who and when; a registered rejection handler is told (best effort). */
  async reject(principal: Principal, id: string): Promise<Task> {
    const task = await this.row(principal.tenantId, id);
    if (task.status !== 'awaiting_approval') throw conflict('task_not_awaiting_approval', `the task is ${task.status}, not awaiting approval`);
    const at = now();
    await this.db.kysely.transaction().execute(async (trx) => {
      const r = await store.transitionTask(trx, task.id, ['awaiting_approval'], {
        status: 'cancelled',
        decision: 'rejected',
        decided_by_type: principal.actor.type,
        decided_by_id: principal.actor.id,
        decided_at: at,
        updated_at: at,
      });
      if (!Number(r.numUpdatedRows)) throw conflict('task_not_awaiting_approval', 'the task was decided meanwhile');
      await this.audit(trx, principal, 'task.rejected', task.id, { action: task.approval_action });
    });
    const handler = task.approval_action ? this.executor.rejections.get(task.approval_action) : undefined;
    if (handler) {
      const payload = task.approval_payload ? (JSON.parse(task.approval_payload) as Record<string, unknown>) : {};
      await handler({ tenantId: task.tenant_id, taskId: task.id, payload, decidedBy: principal.actor }).catch((err) =>
        this.log.warn({ err, taskId: task.id, action: task.approval_action }, 'rejection handler failed'),
      );
    }
    return this.get(principal.tenantId, id);
  }

  async createApprovalTask(input: Parameters<ApprovalGateway['createApprovalTask']>[0]): Promise<{ taskId: string }> {
    const agent = await this.agents.get(input.tenantId, input.agentId);
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
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.insertTask(trx, row);
      await recordAudit(trx, {
        tenantId: input.tenantId,
        actor: input.requestedBy,
        action: 'task.approval_requested',
        resourceType: 'task',
        resourceId: row.id,
        detail: { action: input.action, agentId: agent.id },
      });
    });
    return { taskId: row.id };
  }

  onApproved(action: string, handler: ActionHandler) {
    this.executor.actions.set(action, handler);
  }

  onRejected(action: string, handler: ActionHandler) {
    this.executor.rejections.set(action, handler);
  }

  // ---------------------------------------------------------------- webhooks

  /**
   * A webhook delivery: signed with the task's secret over `<timestamp>.<raw body>`. A bad, missing
   * or stale signature runs nothing (401). The same signed delivery twice fires once.
   */
  async webhook(taskId: string, headers: Record<string, string | string[] | undefined>, rawBody: Buffer, parse: (raw: Buffer) => Promise<unknown>) {
    const task = await store.findTaskById(this.db.kysely, taskId);
    if (!task || task.trigger_type !== 'webhook' || !task.webhook_secret) throw notFound('webhook');
    const header = (name: string) => {
      const v = headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const secret = this.secrets.open(task.webhook_secret, task.id);
    if (secret === null) this.log.warn({ taskId }, 'the webhook secret cannot be opened with this master key (MASTER_KEY changed?)');
    const signatureHeader = header(SIGNATURE_HEADER);
    const check = secret === null ? 'invalid_signature' : checkSignature(secret, header(TIMESTAMP_HEADER), signatureHeader, rawBody, this.clock.now().getTime());
    if (check !== 'ok') {
      const detail = {
        missing_signature: `send ${TIMESTAMP_HEADER} (unix seconds) and ${SIGNATURE_HEADER}: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with the task secret>`,
        invalid_signature: 'the signature does not match the body and timestamp',
        signature_expired: 'the timestamp is more than 5 minutes away from the server time',
      }[check];
      throw new ProblemError(401, check, detail, undefined, { 'www-authenticate': 'HMAC-SHA256' });
    }
    const body = rawBody.length ? await parse(rawBody) : {};
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      throw badRequest('the body must be a JSON object (it becomes the run input)', [{ path: 'body', message: 'must be object' }]);
    }
    if (task.status === 'awaiting_approval') throw conflict('task_awaiting_approval', 'the task awaits approval; deliveries are refused until then');
    const key = `webhook:${signatureHeader!.trim().slice('sha256='.length).toLowerCase()}`;
    const result = await this.db.kysely.transaction().execute(async (trx) => {
      const r = await this.executor.fire(trx, task, { source: 'webhook', key, input: body as Record<string, unknown> });
      if (!r.duplicate) {
        await recordAudit(trx, {
          tenantId: task.tenant_id,
          actor: WEBHOOK_ACTOR,
          action: 'task.webhook_received',
          resourceType: 'task',
          resourceId: task.id,
          detail: { fireId: r.fire.id, decision: r.fire.decision },
        });
      }
      return r;
    });
    if (result.job) this.executor.onEnqueued();
    return {
      accepted: true as const,
      taskId: task.id,
      fireId: result.fire.id,
      decision: result.fire.decision,
      reason: result.fire.reason,
      duplicate: result.duplicate,
    };
  }

  private audit(trx: Kysely<Database>, who: Who, action: string, id: string, detail: Record<string, unknown>) {
    return recordAudit(trx, { tenantId: who.tenantId, actor: who.actor, action, resourceType: 'task', resourceId: id, detail });
  }
}
