import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { type Clock, systemClock } from '../clock.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import { newId, now } from '../ids.js';
import type { RunFinished, RunsService } from '../runs/service.js';
import type { ToolApprovalRequests } from '../runs/approval-requests.js';
import type { ToolDecision } from '../runtime/tool-approvals.js';
import { Loop } from '../scheduler/loop.js';
import type { Task } from '../tasks/schemas.js';
import type { TasksService } from '../tasks/service.js';
import { recordAudit } from '../tenancy/audit.js';
import type { Principal } from '../tenancy/permissions.js';
import type { TraceContext } from '../tracing/tracing.js';
import { argumentsColumn } from './columns.js';
import { type ApprovalItem, type ApproveBody, type ListApprovalsQuery, MAX_ARGUMENTS_CHARS } from './schemas.js';
import * as store from './store.js';

/** How often expired approvals are decided and decided runs nobody resumed are resumed. */
const SWEEP_EVERY_MS = 1000;
/** Approvals expired, and runs resumed, per sweep at most. */
const PER_SWEEP = 100;
/** The furthest an inbox page reaches when it merges tool calls and tasks (each source read from its start). */
const MERGED_WINDOW = 10_000;

export interface ApprovalsOptions {
  db: Db;
  runs: RunsService;
  tasks: TasksService;
  log: FastifyBaseLogger;
  /** Approvals are stamped, and expire, on it (default: real time); runs stamp their expiry on the same clock. */
  clock?: Clock;
}

/**
 * Tool calls that wait for a person, and the one inbox where they and tasks awaiting approval are
 * decided (docs/runtime.md, "Tool calls that wait for approval"). The run engine records waiting calls
 * through this service (it implements runs' ToolApprovalRequests port) and takes the decisions in when
 * it resumes; task approvals go through the tasks service, as their own routes do.
 */
export class ApprovalsService implements ToolApprovalRequests {
  private readonly sweeper: Loop;
  private readonly clock: Clock;

  constructor(private readonly o: ApprovalsOptions) {
    this.clock = o.clock ?? systemClock;
    this.sweeper = new Loop('approval sweep', SWEEP_EVERY_MS, async () => void (await this.sweep()), o.log);
  }

  startBackground() {
    this.sweeper.start();
  }

  async stop() {
    await this.sweeper.stop();
  }

  // ---------------------------------------------------------------- the run engine's port

  async request(trx: Kysely<Database>, r: Parameters<ToolApprovalRequests['request']>[1]): Promise<string[]> {
    const at = now(this.clock);
    const rows = r.calls.map((c) => ({
      id: newId(),
      tenant_id: r.tenantId,
      agent_id: r.agentId,
      run_id: r.runId,
      conversation_id: r.conversationId,
      tool_call_id: c.toolCallId,
      tool_name: c.name,
      arguments: JSON.stringify(c.arguments ?? {}),
      reason: c.reason,
      status: 'pending',
      on_timeout: r.onTimeout,
      decided_arguments: null,
      decision_reason: null,
      decided_by_type: null,
      decided_by_id: null,
      decided_at: null,
      resumed_at: null,
      expires_at: r.expiresAt,
      created_at: at,
    }));
    await store.insertApprovals(trx, rows);
    return rows.map((row) => row.id);
  }

  async take(trx: Kysely<Database>, runId: string): Promise<Map<string, ToolDecision> | null> {
    const rows = await store.untakenOfRun(trx, runId);
    if (rows.some((r) => r.status === 'pending')) return null;
    await store.markTaken(
      trx,
      rows.map((r) => r.id),
      now(this.clock),
    );
    return new Map(
      rows.map((r): [string, ToolDecision] => [
        r.tool_call_id,
        r.status === 'approved'
          ? { approved: true, input: r.decided_arguments === null ? undefined : argumentsColumn(r.decided_arguments) }
          : { approved: false, reason: r.decision_reason ?? 'the call was not approved' },
      ]),
    );
  }

  /** Tool calls waiting for a person, across tenants: read by the metrics when scraped. */
  pendingCount(): Promise<number> {
    return store.countPending(this.o.db.kysely);
  }

  /** Retention deletes ended runs: their approvals (the calls' arguments) go in the same transaction. */
  deleteOfRuns(trx: Kysely<Database>, runIds: string[]): Promise<void> {
    return store.deleteOfRuns(trx, runIds);
  }

  // ---------------------------------------------------------------- the inbox

  /** Tool calls and tasks waiting for a person (or decided: `status`), newest first. */
  async list(tenantId: string, q: ListApprovalsQuery) {
    const { page, limit } = q;
    // A run's approvals (its page's trace) are every one it asked for, decided or not; tasks belong to no run.
    const status = q.status ?? (q.runId ? undefined : 'pending');
    const wantsTools = q.kind !== 'task';
    // Tasks are in the inbox while they await approval; decided ones are read through /tasks.
    const wantsTasks = q.kind !== 'tool_call' && status === 'pending' && !q.runId;
    const filter = { status, agentId: q.agentId, runId: q.runId };
    if (!wantsTasks) {
      const { rows, total } = await store.listApprovals(this.o.db.kysely, { tenantId, filter, limit, offset: (page - 1) * limit });
      return { approvals: rows.map(toolCallItem), total, page, limit };
    }
    if (!wantsTools) {
      const tasks = await this.o.tasks.list(tenantId, { page, limit, status: 'awaiting_approval', agentId: q.agentId });
      return { approvals: tasks.tasks.map(taskItem), total: tasks.total, page, limit };
    }
    // Both kinds, newest first: each source's first page*limit merged, then this page's slice.
    const window = Math.min(page * limit, MERGED_WINDOW);
    const [tools, tasks] = await Promise.all([
      store.listApprovals(this.o.db.kysely, { tenantId, filter, limit: window, offset: 0 }),
      this.o.tasks.list(tenantId, { page: 1, limit: window, status: 'awaiting_approval', agentId: q.agentId }),
    ]);
    const merged = [...tools.rows.map(toolCallItem), ...tasks.tasks.map(taskItem)].sort(
      (a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id),
    );
    return { approvals: merged.slice((page - 1) * limit, page * limit), total: tools.total + tasks.total, page, limit };
  }

  async get(tenantId: string, id: string): Promise<ApprovalItem> {
    const row = await store.findApproval(this.o.db.kysely, tenantId, id);
    if (row) return toolCallItem(row);
    const task = await this.o.tasks.get(tenantId, id).catch((err) => {
      if (err instanceof NotFound) throw new NotFound('approval');
      throw err;
    });
    if (task.status !== 'awaiting_approval') throw new NotFound('approval');
    return taskItem(task);
  }

  /**
   * Approves a waiting tool call (optionally with edited arguments) or a task; once the run has no
   * call left waiting, this process resumes it.
   */
  async approve(principal: Principal, id: string, body: ApproveBody | null | undefined, trace?: TraceContext): Promise<ApprovalItem> {
    const edited = body?.arguments;
    if (edited !== undefined && JSON.stringify(edited).length > MAX_ARGUMENTS_CHARS) {
      throw new InvalidInput(`arguments must be at most ${MAX_ARGUMENTS_CHARS} characters of JSON`, [
        { path: 'arguments', message: `must be at most ${MAX_ARGUMENTS_CHARS} characters of JSON` },
      ]);
    }
    return this.decide(principal, id, {
      status: 'approved',
      arguments: edited,
      trace,
      task: async () => {
        if (edited !== undefined)
          throw new InvalidInput('arguments apply to tool calls only', [{ path: 'arguments', message: 'a task takes no arguments' }]);
        return this.o.tasks.approve(principal, id, trace);
      },
    });
  }

  /** Rejects a waiting tool call (the model is told `reason` as the tool's result) or a task. */
  reject(principal: Principal, id: string, reason: string, trace?: TraceContext): Promise<ApprovalItem> {
    return this.decide(principal, id, { status: 'rejected', reason, trace, task: () => this.o.tasks.reject(principal, id) });
  }

  private async decide(
    principal: Principal,
    id: string,
    d: {
      status: 'approved' | 'rejected';
      arguments?: Record<string, unknown>;
      reason?: string;
      /** Traced, the deciding request's span: the resumed run links to it. */
      trace?: TraceContext;
      task: () => Promise<Task>;
    },
  ): Promise<ApprovalItem> {
    const { tenantId } = principal;
    const row = await store.findApproval(this.o.db.kysely, tenantId, id);
    if (!row) return taskItem(await this.o.tasks.get(tenantId, id).then(d.task, notFoundAsApproval));
    if (row.status !== 'pending') throw new Conflict('approval_not_pending', `the approval is already ${row.status}`);
    const at = now(this.clock);
    // Past its time the approval is the sweep's to decide, as the agent said (onTimeout), not a person's.
    if (row.expires_at <= at) throw approvalExpired(row.expires_at);
    const decided = await this.o.db.kysely.transaction().execute(async (trx) => {
      const won = await store.decide(
        trx,
        row.id,
        { unexpiredAt: at },
        {
          status: d.status,
          decided_arguments: d.arguments === undefined ? null : JSON.stringify(d.arguments),
          decision_reason: d.reason ?? null,
          decided_by_type: principal.actor.type,
          decided_by_id: principal.actor.id,
          decided_at: at,
        },
      );
      if (!won) return false;
      await recordAudit(trx, {
        tenantId,
        actor: principal.actor,
        action: `approval.${d.status}`,
        resourceType: 'approval',
        resourceId: row.id,
        detail: { runId: row.run_id, tool: row.tool_name, editedArguments: d.arguments !== undefined },
      });
      return true;
    });
    if (!decided) {
      // Lost: decided meanwhile, or its time ran out between the read and the write.
      const current = await store.findApproval(this.o.db.kysely, tenantId, id);
      if (current?.status === 'pending') throw approvalExpired(current.expires_at);
      throw new Conflict('approval_not_pending', 'the approval was decided meanwhile');
    }
    await this.resume(row.run_id, d.trace);
    const after = await store.findApproval(this.o.db.kysely, tenantId, id);
    return toolCallItem(after ?? row);
  }

  /** Resumes the run here if nothing of it waits any more (another process may win the claim). */
  private async resume(runId: string, trace: TraceContext | undefined) {
    try {
      await this.o.runs.resume(runId, trace);
    } catch (err) {
      // The sweep tries again; the decision is recorded.
      this.o.log.error({ err, runId }, 'resuming a run after approval failed');
    }
  }

  // ---------------------------------------------------------------- background

  /**
   * Pending approvals past their time decided as their agent said (reject by default), then runs
   * whose every call is decided resumed here; safe in several processes (each decision and each claim
   * is won once).
   */
  async sweep(): Promise<void> {
    const db = this.o.db.kysely;
    const at = now(this.clock);
    for (const row of await store.expired(db, at, PER_SWEEP)) {
      const approve = row.on_timeout === 'approve';
      await db.transaction().execute(async (trx) => {
        const won = await store.decide(
          trx,
          row.id,
          {},
          {
            status: approve ? 'approved' : 'expired',
            decision_reason: approve ? null : 'nobody decided in time: the approval expired',
            decided_by_type: 'system',
            decided_by_id: null,
            decided_at: at,
          },
        );
        if (won)
          await recordAudit(trx, {
            tenantId: row.tenant_id,
            actor: { type: 'system', id: null },
            action: approve ? 'approval.approved' : 'approval.expired',
            resourceType: 'approval',
            resourceId: row.id,
            detail: { runId: row.run_id, tool: row.tool_name, expired: true },
          });
      });
    }
    for (const runId of await store.decidedRuns(db, PER_SWEEP)) {
      if (await this.o.runs.resume(runId).catch(() => false)) continue;
      // Not resumable: ended (its decisions are closed), or claimed by another process just now.
      const ended = await this.o.runs.isEnded(runId);
      if (ended) await store.closeUntaken(db, runId, now(this.clock));
    }
  }

  /** A run ended (a finished listener of the runs service): one that ends while its calls wait (cancelled, failed) leaves nothing to decide. */
  async runFinished(run: RunFinished): Promise<void> {
    // Most runs never wait for approval: two UPDATEs (two commits on SQLite) at each end would find nothing.
    if (run.awaitedApproval === false) return;
    const at = now(this.clock);
    await store.cancelOfRun(this.o.db.kysely, run.runId, at);
    await store.closeUntaken(this.o.db.kysely, run.runId, at);
  }
}

const approvalExpired = (expiresAt: string) =>
  new Conflict('approval_expired', `the approval expired at ${expiresAt}: it is decided as the agent's approval.onTimeout says`);

function notFoundAsApproval(err: unknown): never {
  throw err instanceof NotFound ? new NotFound('approval') : err;
}

function toolCallItem(row: store.ToolApprovalRow): ApprovalItem {
  const decided = row.decided_at && row.status !== 'pending';
  return {
    id: row.id,
    kind: 'tool_call',
    status: row.status as ApprovalItem['status'],
    agentId: row.agent_id,
    reason: row.reason,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    toolCall: {
      runId: row.run_id,
      conversationId: row.conversation_id,
      id: row.tool_call_id,
      name: row.tool_name,
      arguments: argumentsColumn(row.arguments),
    },
    task: null,
    decision: decided
      ? {
          by: row.decided_by_type ? { type: row.decided_by_type, id: row.decided_by_id } : null,
          at: row.decided_at!,
          reason: row.decision_reason,
          ...(row.decided_arguments !== null ? { arguments: argumentsColumn(row.decided_arguments) } : {}),
        }
      : null,
  };
}

/** A task in the inbox: a list's summary (pending) or a task after its decision. */
type TaskLike = Pick<Task, 'id' | 'name' | 'description' | 'agentId' | 'createdAt' | 'status'> & { approval?: Task['approval'] };

function taskItem(task: TaskLike): ApprovalItem {
  const approval = task.approval;
  const decided = approval?.decision && approval.decidedAt;
  return {
    id: task.id,
    kind: 'task',
    status: task.status === 'awaiting_approval' ? 'pending' : approval?.decision === 'rejected' ? 'rejected' : 'approved',
    agentId: task.agentId,
    reason: task.description || task.name,
    createdAt: task.createdAt,
    expiresAt: null,
    toolCall: null,
    task: { id: task.id, name: task.name, description: task.description },
    decision: decided ? { by: approval.decidedBy ?? null, at: approval.decidedAt!, reason: null } : null,
  };
}
