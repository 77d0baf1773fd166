import { systemClock } from '../clock.js';
import * as conversations from '../conversations/turns.js';
import { NotFound, Unavailable } from '../errors.js';
import { newId } from '../ids.js';
import type { TraceContext } from '../tracing/tracing.js';
import { RunControl } from './control.js';
import { NewEventNotices, RunEventHub, type RunEventListener, runsNoticed } from './events.js';
import { RunExecution } from './execute.js';
import { RunFinish } from './finish.js';
import { RunFollowers } from './follow.js';
import { RunLeases } from './leases.js';
import { RunPauses } from './pause.js';
import { FinishedListeners, type RunResources, type RunsOptions } from './resources.js';
import { RunStarts } from './start.js';
import { RunStarter } from './starter.js';
import { isActive } from './statuses.js';
import * as store from './store.js';
import {
  type InjectedInstead,
  type RunHandle,
  type RunOutcome,
  type RunPrincipal,
  type RunRequest,
  RunFault,
  ShutdownAbort,
  type StartedRun,
  type StartRunInput,
} from './types.js';
import { runDetails, runSummary } from './views.js';

export type { Admission } from './admission.js';
export type { RunsOptions } from './resources.js';
/** A task's input may carry a response format (tasks/). */
export { inputResponseFormatErrors, splitResponseFormat } from '../runtime/response-format.js';
export { executable } from './start.js';
export type {
  InjectedInstead,
  RunFinished,
  RunFinishedListener,
  RunHandle,
  RunOrder,
  RunOutcome,
  ReplayedStart,
  RunRequest,
  StartedRun,
} from './types.js';

/** How long an idempotent retry of a non-streamed execution waits for the original run's end. */
const RETRY_WAITS_FOR_END_MS = 60 * 60 * 1000;

/**
 * Runs: every execution of an agent. A facade over one part per job, all built from one
 * `RunResources`: starter.ts (the one way a run is started: the caller's request and its
 * Idempotency-Key), start.ts (admission, the start written with other runs' starts), execute.ts (the
 * tool loop and its events), finish.ts (exactly one terminal state, cost, the reply), leases.ts
 * (renewal, and recovery of runs whose process died), control.ts (inject, cancel, wait), follow.ts
 * (followers of a run's events). Which status may follow which is decided in statuses.ts.
 */
export class RunsService {
  readonly events: RunEventHub;
  /** This process, as lease owner. */
  readonly instanceId = newId();
  private readonly r: RunResources;
  private readonly starts: RunStarts;
  private readonly starter: RunStarter;
  private readonly leases: RunLeases;
  private readonly control: RunControl;
  private readonly followers: RunFollowers;
  private readonly pauses: RunPauses;
  private readonly execution: RunExecution;
  private draining = false;
  private unsubscribers: (() => void)[] = [];

  constructor(options: RunsOptions) {
    // Followers on other replicas read the new events from the database when told.
    const notices = new NewEventNotices((runs) => options.bus.publish('run.events', { runs }));
    this.events = new RunEventHub(
      options.db,
      (err) => options.log.error({ err }, 'run event write failed'),
      (runId, seq) => notices.add(runId, seq),
      (runId, err) => {
        options.log.error({ err, runId }, 'the events of a run could not be recorded: the run fails');
        const fault = new RunFault('events_unrecorded', 'the run’s events could not be recorded; the error is in the server log');
        this.r.active.get(runId)?.controller.abort(fault);
      },
    );
    this.r = {
      ...options,
      clock: options.clock ?? systemClock,
      instanceId: this.instanceId,
      events: this.events,
      active: new Map(),
      finished: new FinishedListeners(options.log, options.finishedListeners ?? []),
      recent: new conversations.RecentMessages(),
    };
    this.pauses = new RunPauses(this.r);
    this.control = new RunControl(this.r, this.pauses);
    this.execution = new RunExecution(this.r, new RunFinish(this.r), this.pauses);
    const execution = this.execution;
    this.starts = new RunStarts(this.r, { execution, control: this.control });
    const { agents, files, idempotency } = options;
    this.starter = new RunStarter({ agents, files, idempotency, begin: (input) => this.begin(input) });
    this.leases = new RunLeases(this.r);
    this.followers = new RunFollowers(this.r);
  }

  /** Starts lease renewal and the recovery of runs whose process died, and listens for other processes' signals. */
  async startBackground(): Promise<void> {
    const { active, bus } = this.r;
    this.unsubscribers.push(
      bus.subscribe('run.cancel', ({ runId }) => active.get(String(runId))?.controller.abort(new Error('cancelled'))),
      bus.subscribe('run.inject', ({ runId, content }) => {
        const run = active.get(String(runId));
        if (run && !run.closing) run.inbox.push(String(content));
      }),
      bus.subscribe('run.events', (payload) => this.followers.wake(runsNoticed(payload))),
    );
    await this.leases.start();
  }

  async stop() {
    await this.leases.stop();
    for (const unsubscribe of this.unsubscribers) unsubscribe();
    this.unsubscribers = [];
  }

  /** Runs executing in this process. */
  get activeCount() {
    return this.r.active.size;
  }

  /**
   * Graceful stop: refuses new runs, lets running ones finish for up to `graceMs`, then ends the rest
   * as failed (`interrupted`) so no lease is left for another process to wait out.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    const pending = () => [...this.r.active.values()].map((run) => run.done);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(pending()), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    for (const run of this.r.active.values()) run.controller.abort(new ShutdownAbort());
    await Promise.all(pending());
  }

  /** Starts a run: the one way every caller starts one (starter.ts). */
  start(request: RunRequest): Promise<StartedRun> {
    return this.starter.start(request);
  }

  private async begin(input: StartRunInput): Promise<RunHandle | InjectedInstead> {
    if (this.draining) throw new Unavailable('shutting_down', 'this server is shutting down; retry on another replica', 1);
    return this.starts.start(input);
  }

  /** Extends the leases of the runs executing here (run by the lease loop; tests call it directly). */
  renewLeases(): Promise<void> {
    return this.leases.renew();
  }

  /** Declares running runs with an expired lease `failed` (`interrupted`); safe in several processes. */
  recoverInterrupted(): Promise<number> {
    return this.leases.recoverInterrupted();
  }

  /**
   * Resumes a run awaiting approval here once every waiting call is decided: claimed (one process
   * wins), then its loop goes on from the pause. False when it is not resumable (still waiting,
   * claimed elsewhere, ended) or this process is shutting down. `resumedBy`: traced, what decided
   * the last call (a request), which the run's span links to.
   */
  async resume(runId: string, resumedBy?: TraceContext): Promise<boolean> {
    if (this.draining) return false;
    const resumed = await this.pauses.claim(runId);
    if (!resumed) return false;
    const tenantId = resumed.input.principal.tenantId;
    this.execution.launch({
      input: resumed.input,
      runId,
      conversation: resumed.conversation,
      history: [],
      at: new Date(resumed.suspension.run.startedAtMs).toISOString(),
      channel: this.r.events.open(runId, tenantId, { firstSeq: resumed.firstSeq }),
      resume: resumed,
      resumedBy,
    });
    this.r.log.info({ runId }, 'run resumed after approval');
    return true;
  }

  /** Delivers a message to the run answering in the conversation, at its next step boundary. */
  inject(tenantId: string, conversationId: string, content: string): Promise<{ runId: string; messageId: string }> {
    return this.control.inject({ tenantId, conversationId, content });
  }

  /** Cancels a queued or running run; answers the run as it stands afterwards. */
  async cancel(principal: Pick<RunPrincipal, 'tenantId' | 'actor' | 'agentId'>, runId: string) {
    await this.control.cancel(principal, runId);
    return this.get(principal.tenantId, runId);
  }

  /** Resolves when the run is completed, failed or cancelled, through any number of pauses for approval, or after the timeout. */
  waitForTerminal(runId: string, timeoutMs: number): Promise<void> {
    return this.control.waitForTerminal(runId, timeoutMs);
  }

  /**
   * How a started run ended: from memory when this process wrote its end, otherwise read back
   * (it was ended elsewhere, e.g. recovered as interrupted).
   */
  async outcome(tenantId: string, handle: RunHandle): Promise<RunOutcome> {
    const written = await handle.done;
    if (written) return written;
    const run = await this.get(tenantId, handle.runId);
    // A caller waiting for the result is never answered a run that has not ended: its end could not be
    // recorded (finish.ts; recovery ends it once its lease expires), or it still runs elsewhere.
    if (run.status === 'queued' || run.status === 'running') {
      throw new Unavailable(
        'run_end_unrecorded',
        `the run has no recorded end (run ${run.id}): its end could not be recorded, or it still runs elsewhere; it is ended as interrupted at the latest when its lease expires (GET /api/v1/runs/${run.id})`,
        Math.ceil(this.r.leaseMs / 1000),
      );
    }
    const reply = await conversations.findReply(this.r.db.kysely, tenantId, handle.runId);
    return {
      runId: run.id,
      conversationId: handle.conversationId,
      status: run.status as RunOutcome['status'],
      output: run.output,
      structuredOutput: run.structuredOutput,
      finishReason: run.finishReason,
      error: run.error,
      cost: run.cost,
      tokenUsage: run.tokenUsage,
      toolCalls: run.toolCalls,
      duration: run.duration ?? 0,
      reply: reply ?? null,
    };
  }

  /**
   * How an earlier run ended, waiting for its end here or in another process (an idempotent retry of
   * the request that started it answers this).
   */
  async outcomeOf(tenantId: string, runId: string): Promise<RunOutcome> {
    const run = await this.get(tenantId, runId);
    // Executing here: its end as written; elsewhere: read back once it has ended.
    const local = this.r.active.get(runId);
    // A run waiting for a person is answered as it stands, as the first request was.
    if (!local && run.status !== 'awaiting_approval') await this.control.waitForEnd(runId, RETRY_WAITS_FOR_END_MS);
    const done = local?.done ?? Promise.resolve(null);
    return this.outcome(tenantId, { runId, conversationId: run.conversationId ?? '', userMessageId: '', startedAt: run.createdAt, done });
  }

  /**
   * What a follower of a run's events needs before its first event: the conversation, whether the run
   * has ended with its closing event stored, and the id of that event (a reconnect past it is told to stop).
   */
  async eventsState(
    tenantId: string,
    runId: string,
    agentId?: string,
  ): Promise<{ conversationId: string | null; ended: boolean; lastSeq: number }> {
    const row = await store.findRun(this.r.db.kysely, tenantId, runId);
    if (!row || (agentId !== undefined && row.agent_id !== agentId)) throw new NotFound('run');
    if (isActive(row.status)) return { conversationId: row.conversation_id, ended: false, lastSeq: 0 };
    // Ended means its closing event is stored too: a row ended without it is followed (follow.ts waits for it, then stops).
    const last = await store.lastEvent(this.r.db.kysely, runId);
    const closed = last.event === 'done' || last.event === 'error';
    return { conversationId: row.conversation_id, ended: closed, lastSeq: last.seq };
  }

  /** Whether a run has ended (or does not exist): not queued, running nor awaiting approval. */
  async isEnded(runId: string): Promise<boolean> {
    return !(await store.isRunActive(this.r.db.kysely, runId));
  }

  /** A run; with `agentId` (an agent's own token), only a run of that agent. */
  async get(tenantId: string, runId: string, agentId?: string) {
    const row = await store.findRun(this.r.db.kysely, tenantId, runId);
    if (!row || (agentId !== undefined && row.agent_id !== agentId)) throw new NotFound('run');
    return runDetails(row);
  }

  /** An agent's runs, kept after it is deleted; NotFound for an agent this tenant never had a run of, nor has. */
  async listForAgent(tenantId: string, agentId: string, page: number, limit: number) {
    const { rows, total } = await store.listAgentRuns(this.r.db.kysely, { tenantId, agentId, limit, offset: (page - 1) * limit });
    if (total === 0) await this.r.agents.get(tenantId, agentId);
    return { runs: rows.map(runSummary), total, page, limit };
  }

  /** A tenant's runs across its agents, newest first, narrowed by the filter. */
  async listForTenant(tenantId: string, filter: store.RunFilter, page: number, limit: number) {
    const { rows, total } = await store.listTenantRuns(this.r.db.kysely, { tenantId, limit, offset: (page - 1) * limit, ...filter });
    return { runs: rows.map(runSummary), total, page, limit };
  }

  /** A task's runs, newest first; `status` narrows them (e.g. the latest completed one). */
  async listForTask(tenantId: string, { taskId, status }: { taskId: string; status?: string }, page: number, limit: number) {
    const { rows, total } = await store.listTaskRuns(this.r.db.kysely, { tenantId, taskId, limit, offset: (page - 1) * limit, status });
    return { runs: rows.map(runSummary), total, page, limit };
  }

  /**
   * Follows a run's events after `afterSeq`: from memory when it runs here, otherwise from the
   * database (polling while another process still runs it). Calls `listener(null)` at the end.
   */
  follow(tenantId: string, runId: string, afterSeq: number, listener: RunEventListener): Promise<() => void> {
    return this.followers.follow({ tenantId, runId, afterSeq }, listener);
  }
}
