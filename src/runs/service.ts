import type { FastifyBaseLogger } from 'fastify';
import type { Insertable, Kysely, Updateable } from 'kysely';
import type { Agent } from '../agents/schemas.js';
import type { AgentsService } from '../agents/service.js';
import * as conversationStore from '../conversations/store.js';
import type { Db } from '../db/database.js';
import type { Database, RunTable } from '../db/schema.js';
import { ProblemError, conflict, isDatabaseUnavailable, notFound } from '../http/errors.js';
import { newId, now } from '../ids.js';
import { isPromise } from '../maybe-promise.js';
import { ModelCallError, runLoop, type ConversationTurn, type LoopResult } from '../runtime/loop.js';
import type { PriceTable } from '../runtime/models/prices.js';
import { ModelUnavailableError, type ModelRegistry } from '../runtime/models/registry.js';
import type { ToolRegistry } from '../runtime/tools/registry.js';
import type { ToolSet } from '../runtime/tools/types.js';
import type { SignalBus } from '../signals/bus.js';
import { newAdmissionBatch, withdrawAdmission, type AdmissionBatch, type LimitsService, type RunLimits } from '../tenancy/limits.js';
import type { Principal } from '../tenancy/permissions.js';
import { type DeferredInserts, GroupCommit } from '../db/group-commit.js';
import { NewEventNotices, RunEventHub, eventRows, readStoredEvents, runsNoticed, type RunChannel, type RunEvent, type RunEventListener } from './events.js';
import * as store from './store.js';
import { runDetails, runSummary, type RunError } from './views.js';

export type RunKind = 'execute' | 'chat' | 'stream' | 'message' | 'task' | 'delegation';
export type OnActiveRun = 'reject' | 'enqueue' | 'inject';

export interface StartRunInput {
  principal: Pick<Principal, 'tenantId' | 'actor'>;
  agent: Agent;
  kind: RunKind;
  /** The user's message as stored in the conversation. */
  content: string;
  /** Extra text the model sees with the message (attachments, task input); not stored as content. */
  modelContext?: string;
  attachments?: string[];
  conversationId?: string;
  /** The conversation's row, when the caller has just read it (not read again). */
  conversation?: conversationStore.ConversationRow;
  enableTools?: boolean;
  maxTokens?: number;
  taskId?: string;
  onActiveRun?: OnActiveRun;
  /** For a run another agent started through a delegation tool: how many delegations deep it is. */
  delegationDepth?: number;
  /**
   * Written with the run's start, in its transaction (a task marks its job running): the run exists
   * exactly when this has been written. Throwing aborts the start; nothing is written.
   */
  onStart?: (trx: Kysely<Database>, run: { runId: string; startedAt: string }) => Promise<void>;
  /**
   * Written with the run's end when this process writes it, in its transaction (a task settles its
   * job). Throwing aborts that write: the run then ends through lease recovery, whose end is told to
   * `onRunFinished` listeners as usual.
   */
  onFinish?: (trx: Kysely<Database>, run: RunFinished) => Promise<void>;
}

/** A started run; `done` settles when it reaches its terminal state. */
export interface RunHandle {
  runId: string;
  conversationId: string;
  userMessageId: string;
  startedAt: string;
  /** The run's end as this process wrote it; null when it was ended elsewhere (read it with `get`). */
  done: Promise<RunOutcome | null>;
}

/** How a run ended, as its end was written: callers answer from this without reading the run back. */
export interface RunOutcome {
  runId: string;
  conversationId: string;
  status: 'completed' | 'failed' | 'cancelled';
  output: string;
  error: RunError | null;
  cost: number;
  tokenUsage: { inputTokens: number; outputTokens: number };
  toolCalls: LoopResult['toolCalls'];
  duration: number;
  /** The assistant's message the run added to the conversation, if any. */
  reply: conversationStore.MessageRow | null;
}

/** A run reached its terminal state (told to `onRunFinished` listeners, once per run). */
export interface RunFinished {
  runId: string;
  tenantId: string;
  taskId: string | null;
  status: 'completed' | 'failed' | 'cancelled';
  /** The end as written, when the writer knows it whole (listeners need not read the run back). */
  ended?: { output: string; error: RunError | null };
  /** The run's own `onFinish` was written in the same transaction as this end. */
  finishedInTransaction?: boolean;
}

export type RunFinishedListener = (run: RunFinished) => Promise<void> | void;

/** What `start` answers when the message went to an already running run instead. */
export interface InjectedInstead {
  injected: true;
  runId: string;
  messageId: string;
  conversationId: string;
}

interface ActiveRun {
  controller: AbortController;
  inbox: string[];
  channel: RunChannel;
  done: Promise<RunOutcome | null>;
  /** Set once the loop has returned: later injections are refused rather than lost. */
  closing: boolean;
  taskId: string | null;
  onFinish?: StartRunInput['onFinish'];
  /** Set for a run that executes while its start waits for a batch (`startAhead`). */
  start?: PendingStart;
}

/** The start of a run executing ahead of it (`startAhead`). */
interface PendingStart {
  /** `queued` until a batch first takes the start; while queued, the run's end may join it. */
  phase: 'queued' | 'writing';
  /** The run's end, when it came while the start was queued: the two are written as one. */
  end?: RunEnd;
  /** Settles when the start (with the end, if it joined) is committed; rejects if it could not be. */
  written: Promise<void>;
  failed: boolean;
}

/** A run's end as `finish` writes it. */
interface RunEnd {
  at: string;
  patch: Updateable<RunTable>;
  reply: conversationStore.MessageRow | null;
  /** The run's last events, taken from its channel once. */
  events: () => RunEvent[];
}

/** A run being started: what its start writes is made of these. */
interface RunStart {
  input: StartRunInput;
  runId: string;
  at: string;
  userMessageId: string;
  /** Stored as the run's options. */
  options: Record<string, unknown>;
}

/** What a run's start answers once written, or the refusal of its admission (nothing was written). */
type StartWritten = StartedRun | { refused: ProblemError };
type StartedRun = { conversation: conversationStore.ConversationRow; history: HistoryMessage[] };

/** The rows a run's start inserts; `conversation` only when the run opens a new conversation. */
interface StartRows {
  conversation?: conversationStore.ConversationRow;
  message: conversationStore.MessageRow;
  run: Insertable<RunTable>;
}

type HistoryMessage = Awaited<ReturnType<typeof conversationStore.history>>[number];

/** Abort reason when the server shuts down before a run could finish. */
export class ShutdownAbort extends Error {
  constructor() {
    super('the server shut down before the run finished');
  }
}

/**
 * Adds a section to the system prompt of a run, after the agent's own prompts (the skills domain
 * announces the agent's skills this way). Called once per run; `undefined` adds nothing; one that
 * fails is logged and left out, so it never stops the run.
 */
export type SystemPromptContributor = (ctx: { tenantId: string; agent: Agent; toolsEnabled: boolean }) => Promise<string | undefined>;

const RENEW_EVERY_FRACTION = 3;
const ENQUEUE_WAIT_MS = 10 * 60_000;
/**
 * Runs' starts and ends per transaction at most (group commit). Starts are what new requests wait
 * for, all of them. Ends: larger batches save commits but hold up the requests that arrive meanwhile
 * (measured with 50 clients: 32 per commit gave execute +15% and the first streamed token p50 14 ms
 * instead of 5; docs/benchmarks-history.md, fourth round).
 */
const STARTS_PER_COMMIT = 64;
const ENDS_PER_COMMIT = 8;
/** Batches of starts, and of ends, written at once on PostgreSQL (each takes a pooled connection while it runs). */
const POSTGRES_BATCHES_AT_ONCE = 4;

export function executable(agent: Agent) {
  if (agent.status === 'paused') throw conflict('agent_paused', 'the agent is paused; resume it to execute');
  if (agent.hosting === 'external' || agent.status === 'registered') {
    throw conflict('agent_not_executable', 'the agent is hosted elsewhere (registered) and cannot be executed here');
  }
}

/**
 * Runs: every execution of an agent. Starts runs (conversation claim, messages, run row in one
 * transaction, group-committed with other runs' starts), drives the tool loop, streams events, ends
 * each run in exactly one terminal state, and keeps leases so a run whose process died is declared
 * interrupted by any other process.
 */
export class RunsService {
  readonly events: RunEventHub;
  /** Sections other domains add to every run's system prompt, in this order. */
  readonly systemPromptContributors: SystemPromptContributor[] = [];
  /** This process, as lease owner. */
  readonly instanceId = newId();
  private readonly active = new Map<string, ActiveRun>();
  /** Followers in this process of runs executing elsewhere, woken by `run.events` signals. */
  private readonly remoteFollowers = new Map<string, Set<() => void>>();
  private timers: NodeJS.Timeout[] = [];
  private draining = false;
  private unsubscribers: (() => void)[] = [];
  private readonly finishedListeners: RunFinishedListener[] = [];
  /** Runs' starts, written together when several requests arrived in the same turn. */
  private readonly starts: GroupCommit;
  /** Runs' ends, written several to a transaction behind the requests waiting to be served. */
  private readonly ends: GroupCommit;
  /**
   * Starts of runs under a tenant's concurrency limit or a budget, each admitted in the transaction
   * that inserts it; one batch at a time, as admissions hold a lock until they commit.
   */
  private readonly admittedStarts: GroupCommit;
  private readonly admissions = new WeakMap<DeferredInserts, AdmissionBatch>();

  constructor(
    private readonly db: Db,
    private readonly models: ModelRegistry,
    private readonly tools: ToolRegistry,
    private readonly prices: PriceTable,
    private readonly leaseMs: number,
    private readonly log: FastifyBaseLogger,
    private readonly bus: SignalBus,
    private readonly limits: LimitsService,
    private readonly agents: AgentsService,
  ) {
    // Followers on other replicas read the new events from the database when told.
    const notices = new NewEventNotices((runs) => this.bus.publish('run.events', { runs }));
    this.events = new RunEventHub(db, (err) => this.log.error({ err }, 'run event write failed'), (runId, seq) => notices.add(runId, seq));
    const concurrency = db.dialect === 'postgres' ? POSTGRES_BATCHES_AT_ONCE : 1;
    this.starts = new GroupCommit(db.kysely, { maxBatch: STARTS_PER_COMMIT, concurrency, writesPaused: db.writesPaused });
    this.admittedStarts = new GroupCommit(db.kysely, { maxBatch: STARTS_PER_COMMIT, concurrency: 1, writesPaused: db.writesPaused });
    this.ends = new GroupCommit(db.kysely, {
      maxBatch: ENDS_PER_COMMIT,
      concurrency,
      writesPaused: db.writesPaused,
      // The streams' tokens go out before a batch of ends is written, not behind it: written, then
      // a turn of the event loop so they leave the sockets (SSE writes are corked per tick).
      beforeBatch: async () => {
        if (await this.events.flush()) await new Promise<void>((r) => setImmediate(r));
      },
    });
  }

  // ---------------------------------------------------------------- background duties

  /** Starts lease renewal and the recovery of runs whose process died. */
  startBackground() {
    this.unsubscribers.push(
      this.bus.subscribe('run.cancel', ({ runId }) => this.active.get(String(runId))?.controller.abort(new Error('cancelled'))),
      this.bus.subscribe('run.inject', ({ runId, content }) => {
        const run = this.active.get(String(runId));
        if (run && !run.closing) run.inbox.push(String(content));
      }),
      this.bus.subscribe('run.events', (payload) => {
        for (const runId of runsNoticed(payload)) for (const wake of this.remoteFollowers.get(runId) ?? []) wake();
      }),
    );
    const renew = setInterval(() => void this.renewLeases().catch((err) => this.log.error({ err }, 'lease renewal failed')), this.leaseMs / RENEW_EVERY_FRACTION);
    const reap = setInterval(() => void this.recoverInterrupted().catch((err) => this.log.error({ err }, 'run recovery failed')), this.leaseMs / 2);
    renew.unref();
    reap.unref();
    this.timers.push(renew, reap);
    return this.recoverInterrupted();
  }

  async stop() {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const u of this.unsubscribers) u();
    this.unsubscribers = [];
  }

  /**
   * Registers a listener told of every run that ends, by the process that wrote the terminal state
   * (after the write): here at the end of a run, or wherever an interrupted or orphaned run is ended.
   */
  onRunFinished(listener: RunFinishedListener) {
    this.finishedListeners.push(listener);
  }

  private async notifyFinished(run: RunFinished) {
    for (const listener of this.finishedListeners) {
      try {
        await listener(run);
      } catch (err) {
        this.log.error({ err, runId: run.runId }, 'run finished listener failed');
      }
    }
  }

  /** Runs executing in this process. */
  get activeCount() {
    return this.active.size;
  }

  /**
   * Graceful stop: refuses new runs, lets running ones finish for up to `graceMs`, then ends the rest
   * as failed (`interrupted`) so no lease is left for another process to wait out.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    const pending = () => [...this.active.values()].map((r) => r.done);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(pending()), new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    for (const run of this.active.values()) run.controller.abort(new ShutdownAbort());
    await Promise.all(pending());
  }

  private async renewLeases() {
    const ids = [...this.active.keys()];
    if (!ids.length) return;
    await store.renewLeases(this.db.kysely, this.instanceId, ids, new Date(Date.now() + this.leaseMs).toISOString());
    // A cancel sent to another process reaches this one through the row.
    const requested = await this.db.kysely
      .selectFrom('runs')
      .select('id')
      .where('id', 'in', ids)
      .where('cancel_requested', '=', 1)
      .execute();
    for (const r of requested) this.active.get(r.id)?.controller.abort(new Error('cancelled'));
  }

  /** Declares running runs with an expired lease `failed` (`interrupted`); safe in several processes. */
  async recoverInterrupted(): Promise<number> {
    const expired = await store.expiredRuns(this.db.kysely, now(), 100);
    let recovered = 0;
    for (const run of expired) {
      if (this.active.has(run.id)) continue;
      const at = now();
      const error: RunError = { code: 'interrupted', message: 'the process running this run stopped before it finished' };
      // What the client was already sent survives: the streamed tokens are in the event log.
      const events = await readStoredEvents(this.db, run.id, 0);
      const output = events
        .filter((e) => e.event === 'token')
        .map((e) => (e.data as { text: string }).text)
        .join('');
      const won = await this.db.kysely.transaction().execute(async (trx) => {
        const r = await store.finishRun(trx, run.id, {
          status: 'failed',
          output,
          error: JSON.stringify(error),
          completed_at: at,
          duration_ms: run.started_at ? Date.parse(at) - Date.parse(run.started_at) : null,
          lease_owner: null,
          lease_expires_at: null,
        });
        if (!Number(r.numUpdatedRows)) return false;
        if (run.conversation_id) await conversationStore.releaseConversation(trx, run.conversation_id, run.id);
        return true;
      });
      if (!won) continue;
      recovered++;
      await this.notifyFinished({ runId: run.id, tenantId: run.tenant_id, taskId: run.task_id, status: 'failed', ended: { output, error } });
      // Followers of the stream learn how it ended.
      const seq = (events.at(-1)?.seq ?? 0) + 1;
      await store.insertEvents(this.db.kysely, [{ run_id: run.id, seq, event: 'error', data: JSON.stringify(error) }]).catch(() => {});
      this.log.warn({ runId: run.id }, 'run interrupted: its process stopped renewing the lease');
    }
    return recovered;
  }

  // ---------------------------------------------------------------- starting runs

  async start(input: StartRunInput): Promise<RunHandle | InjectedInstead> {
    if (this.draining) throw new ProblemError(503, 'shutting_down', 'this server is shutting down; retry on another replica', undefined, { 'retry-after': '1' });
    executable(input.agent);
    const tenantId = input.principal.tenantId;
    // Null when no limit or budget applies: then the start is group-committed with no admission at all.
    const limits = await this.limits.runLimits(tenantId, input.agent.id);
    const runId = newId();
    let at = now();
    let conversationId = input.conversationId;
    let conversation: conversationStore.ConversationRow | undefined;

    if (conversationId) {
      conversation = input.conversation ?? (await conversationStore.findConversation(this.db.kysely, tenantId, conversationId));
      if (!conversation) throw notFound('conversation');
      if (conversation.agent_id !== input.agent.id) {
        throw conflict('conversation_agent_mismatch', 'the conversation belongs to another agent');
      }
      if (conversation.status !== 'active') throw conflict('conversation_not_active', `the conversation is ${conversation.status}; only active conversations take messages`);
    }

    let history: HistoryMessage[] = [];
    let userMessageId = newId();
    const options = { enableTools: input.enableTools ?? true, maxTokens: input.maxTokens ?? null, onActiveRun: input.onActiveRun ?? null, budget: {} };
    // Streaming callers want the first token as soon as it exists, which writing the start and the end
    // as one would hold back until the end: their runs start as the others do.
    const streaming = input.kind === 'stream' || input.kind === 'chat';
    // A run under limits is admitted before it executes, so never ahead of its start.
    if (!limits && !conversationId && !input.onStart && !input.onFinish && !streaming) return this.startAhead({ input, runId, at, userMessageId, options });
    const policy = input.onActiveRun ?? input.agent.configuration.onActiveRun;
    const deadline = Date.now() + ENQUEUE_WAIT_MS;

    // One transaction starts the run: an existing conversation is claimed (and its new message counted)
    // in it, and its history read after the claim, so no answer that ended meanwhile is missed. A busy
    // conversation writes nothing; the agent's policy then injects, waits or refuses.
    for (;;) {
      const started = await this.startTransaction({ input, runId, at, userMessageId, options }, conversation, limits);
      if (started) {
        ({ conversation, history } = started);
        break;
      }
      const instead = await this.whenBusy(tenantId, conversationId!, input, policy, deadline);
      if (instead) return instead;
      // After waiting, the message comes after the answer that was running: a new id and time.
      at = now();
      userMessageId = newId();
    }
    conversationId = conversation!.id;

    const activeRun = this.launch(input, runId, conversation!, history, at, this.events.open(runId, tenantId));
    return { runId, conversationId: conversationId!, userMessageId, startedAt: at, done: activeRun.done };
  }

  /**
   * Starts a run in a new conversation, with nothing else to write in its start (no task's job), without
   * waiting for its start to be written: the run executes while its start waits for the next batch of
   * starts, and answers once the start is committed, as `start` always does. A run that ends before its
   * batch is written (the echo model; any answer within that turn) is written once, as it ended: the
   * conversation, both messages, the run and its events as rows of the batch, and no UPDATE of
   * either. Nothing of the run leaves this process before its start is committed: its events wait
   * (held channel), tools wait (`beforeToolCalls`), and nobody else knows its id yet. If the start
   * cannot be written the run is aborted, leaves nothing behind, and the caller gets the error.
   */
  private async startAhead(run: RunStart): Promise<RunHandle> {
    const { input, runId, at, userMessageId } = run;
    const rows = this.startRows(run, undefined);
    const conversation = rows.conversation!;
    const channel = this.events.open(runId, input.principal.tenantId, { held: true });
    const start: PendingStart = { phase: 'queued', written: Promise.resolve(), failed: false };
    start.written = this.starts
      .write(async (_trx, later) => {
        start.phase = 'writing';
        const end = start.end;
        if (!end) {
          later.insert('conversations', conversation);
          later.insert('messages', rows.message);
          later.insert('runs', rows.run);
          return;
        }
        // The rows as the end would leave them (finish: countMessages or releaseConversation, finishRun).
        const replied = end.reply ? { message_count: 2, last_message_at: end.at, duration_ms: Date.parse(end.at) - Date.parse(at), updated_at: end.at } : {};
        later.insert('conversations', { ...conversation, ...replied, active_run_id: null });
        later.insert('messages', rows.message);
        if (end.reply) later.insert('messages', end.reply);
        later.insert('runs', { ...rows.run, ...end.patch } as Insertable<RunTable>);
        for (const row of eventRows(runId, end.events())) later.insert('run_events', row);
      })
      .catch((err: unknown) => {
        start.failed = true;
        throw err;
      });
    const activeRun = this.launch(input, runId, conversation, [], at, channel, start);
    try {
      await start.written;
    } catch (err) {
      activeRun.controller.abort(err);
      channel.takePending();
      throw err;
    } finally {
      channel.release();
    }
    return { runId, conversationId: conversation.id, userMessageId, startedAt: at, done: activeRun.done };
  }

  /** Registers the run as executing here and sets it going. */
  private launch(
    input: StartRunInput,
    runId: string,
    conversation: conversationStore.ConversationRow,
    history: HistoryMessage[],
    at: string,
    channel: RunChannel,
    start?: PendingStart,
  ): ActiveRun {
    const messages: ConversationTurn[] = history.map((m) => ({ role: m.role === 'assistant' ? 'assistant' : 'user', content: m.content }));
    messages.push({ role: 'user', content: input.modelContext ? `${input.content}\n\n${input.modelContext}` : input.content });
    const controller = new AbortController();
    const activeRun: ActiveRun = { controller, inbox: [], channel, done: Promise.resolve(null), closing: false, taskId: input.taskId ?? null, onFinish: input.onFinish, start };
    this.active.set(runId, activeRun);
    activeRun.done = this.execute(runId, conversation.id, conversation.created_at, input, messages, activeRun, Date.parse(at)).catch((err) => {
      this.log.error({ err, runId }, 'run execution failed unexpectedly');
      return null;
    });
    return activeRun;
  }

  /**
   * The run's start, in one transaction (shared with the other starts of the same turn of the event
   * loop: group commit): a new conversation born holding the run and its first
   * message, or an existing one claimed (its new message counted in the same statement) and its
   * history read; the user's message; the run; the caller's `onStart`. The new rows go in with the
   * other starts' rows, one INSERT per table for the batch. Answers the conversation and the history
   * the model is given. Answers null, having written nothing, when another run holds the conversation.
   */
  private async startTransaction(
    run: RunStart,
    existing: conversationStore.ConversationRow | undefined,
    limits: RunLimits | null,
  ): Promise<StartedRun | null> {
    const { input, runId, at } = run;
    const tenantId = input.principal.tenantId;
    const write = async (trx: Kysely<Database>, later: DeferredInserts): Promise<StartWritten | null> => {
      // Counted and claimed in this transaction: the run row it inserts is the reservation. A refusal
      // is an answer (nothing written yet), so the other starts of the batch go ahead.
      let admission: AdmissionBatch | undefined;
      if (limits) {
        admission = this.admissionOf(later);
        try {
          run.options.budget = await this.limits.admitInTransaction(trx, admission, tenantId, input.agent.id, limits);
        } catch (err) {
          if (err instanceof ProblemError) return { refused: err };
          throw err;
        }
      }
      let history: HistoryMessage[] = [];
      if (existing) {
        if (!(await conversationStore.claimConversation(trx, tenantId, existing.id, runId, { at, createdAt: existing.created_at }))) {
          if (admission) withdrawAdmission(admission, tenantId, input.agent.id);
          return null;
        }
        history = await conversationStore.history(trx, tenantId, existing.id, input.agent.configuration.memoryWindow);
      }
      const rows = this.startRows(run, existing);
      if (rows.conversation) later.insert('conversations', rows.conversation);
      later.insert('messages', rows.message);
      later.insert('runs', rows.run);
      await input.onStart?.(trx, { runId, startedAt: at });
      return { conversation: rows.conversation ?? existing!, history };
    };
    // Starts to admit have batches of their own, so the others' never wait for an admission's lock.
    const written = await (limits ? this.admittedStarts : this.starts).write(write);
    if (written && 'refused' in written) throw written.refused;
    return written;
  }

  /** The admissions of the transaction `later` belongs to (one DeferredInserts per transaction). */
  private admissionOf(later: DeferredInserts): AdmissionBatch {
    let batch = this.admissions.get(later);
    if (!batch) this.admissions.set(later, (batch = newAdmissionBatch()));
    return batch;
  }

  /** The rows a run's start inserts; a new conversation (when `existing` is not given) is born holding the run. */
  private startRows({ input, runId, at, userMessageId, options }: RunStart, existing: conversationStore.ConversationRow | undefined): StartRows {
    const tenantId = input.principal.tenantId;
    const conversation: conversationStore.ConversationRow | undefined = existing
      ? undefined
      : {
          id: newId(),
          tenant_id: tenantId,
          agent_id: input.agent.id,
          app_id: input.agent.appId,
          name: input.content.slice(0, 80),
          status: 'active',
          metadata: '{}',
          // Born holding the user's message (one statement fewer than counting it afterwards).
          message_count: 1,
          last_message_at: at,
          duration_ms: 0,
          active_run_id: runId,
          created_by: input.principal.actor.id,
          created_at: at,
          updated_at: at,
          deleted_at: null,
        };
    const conversationId = existing?.id ?? conversation!.id;
    return {
      conversation,
      message: {
        id: userMessageId,
        tenant_id: tenantId,
        conversation_id: conversationId,
        run_id: runId,
        role: 'user',
        content: input.content,
        tool_calls: null,
        token_usage: null,
        attachments: input.attachments?.length ? JSON.stringify(input.attachments) : null,
        created_at: at,
      },
      run: {
        id: runId,
        tenant_id: tenantId,
        agent_id: input.agent.id,
        conversation_id: conversationId,
        task_id: input.taskId ?? null,
        kind: input.kind,
        status: 'running',
        model: input.agent.model,
        input: input.content,
        options: JSON.stringify(options),
        output: '',
        error: null,
        cost: 0,
        input_tokens: 0,
        output_tokens: 0,
        duration_ms: null,
        tool_calls: '[]',
        steps: '[]',
        warnings: '[]',
        cancel_requested: 0,
        lease_owner: this.instanceId,
        lease_expires_at: new Date(Date.now() + this.leaseMs).toISOString(),
        created_at: at,
        started_at: at,
        completed_at: null,
      },
    };
  }

  /**
   * The conversation was busy: applies the agent's policy. Answers the injection when the message
   * went to the running answer, undefined to try the start again (the run ended; `enqueue` waited
   * for it), or throws (refused, waited too long, the conversation is gone or no longer active).
   */
  private async whenBusy(tenantId: string, conversationId: string, input: StartRunInput, policy: OnActiveRun, deadline: number): Promise<InjectedInstead | undefined> {
    const current = await conversationStore.findConversation(this.db.kysely, tenantId, conversationId);
    if (!current) throw notFound('conversation');
    if (current.status !== 'active') throw conflict('conversation_not_active', `the conversation is ${current.status}`);
    if (!current.active_run_id) return undefined;
    if (policy === 'inject') {
      const injected = await this.inject(tenantId, conversationId, input.content);
      return { injected: true, ...injected, conversationId };
    }
    if (policy !== 'enqueue' || Date.now() > deadline) {
      throw conflict('conversation_busy', 'the agent is still answering in this conversation; wait, inject, or set onActiveRun');
    }
    await this.waitForEnd(current.active_run_id, deadline - Date.now());
    return undefined;
  }

  /** Resolves when the run has ended (here or in another process), or after the timeout. */
  async waitForEnd(runId: string, timeoutMs: number): Promise<void> {
    const local = this.active.get(runId);
    if (local) {
      await Promise.race([local.done, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
      return;
    }
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const run = await store.findRunById(this.db.kysely, runId);
      if (!run || !store.ACTIVE_STATUSES.includes(run.status as 'running')) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  // ---------------------------------------------------------------- executing

  private async execute(
    runId: string,
    conversationId: string,
    conversationCreatedAt: string,
    input: StartRunInput,
    messages: ConversationTurn[],
    activeRun: ActiveRun,
    startedAtMs: number,
  ): Promise<RunOutcome | null> {
    const { channel, controller } = activeRun;
    const agent = input.agent;
    const tenantId = input.principal.tenantId;
    let toolSet: ToolSet = { tools: [] };
    let loop: LoopResult | undefined;
    let failure: RunError | undefined;
    try {
      const model = this.models.resolve(agent.model);
      const toolContext = { tenantId, agent, runId, conversationId, delegationDepth: input.delegationDepth };
      const toolsEnabled = input.enableTools ?? true;
      if (toolsEnabled) {
        const tools = this.tools.forRun({ ...toolContext, signal: controller.signal });
        toolSet = isPromise(tools) ? await tools : tools;
      }
      const contributed = await this.contributedPrompt(runId, { tenantId, agent, toolsEnabled });
      const system = [agent.systemPrompt, agent.contextPrompt, ...contributed].filter(Boolean).join('\n\n') || undefined;
      const maxTokens = input.maxTokens ?? agent.configuration.maxTokens ?? undefined;
      loop = await runLoop({
        model,
        system,
        messages,
        tools: toolSet.tools,
        toolContext,
        maxSteps: agent.configuration.maxSteps,
        maxTokens,
        temperature: agent.configuration.temperature ?? undefined,
        toolTimeoutMs: agent.configuration.toolTimeoutMs,
        signal: controller.signal,
        drainInbox: () => activeRun.inbox.splice(0),
        onEvent: (e) => channel.emit(e.event, e.data),
        // No tool acts for a run that is not recorded yet.
        beforeToolCalls: activeRun.start ? () => activeRun.start!.written : undefined,
      });
    } catch (err) {
      if (err instanceof ModelCallError) {
        loop = err.partial;
        failure = { code: 'model_error', message: err.message };
      } else if (err instanceof ModelUnavailableError) {
        failure = { code: err.code, message: err.message };
      } else if (controller.signal.aborted) {
        loop = undefined;
      } else {
        this.log.error({ err, runId }, 'run failed');
        failure = { code: 'internal_error', message: 'the run failed unexpectedly; the error is in the server log' };
      }
    } finally {
      activeRun.closing = true;
      if (toolSet.close) await toolSet.close().catch(() => {});
    }
    if (!failure && controller.signal.reason instanceof ShutdownAbort) {
      failure = { code: 'interrupted', message: controller.signal.reason.message };
    }
    const cancelled = !failure && (controller.signal.aborted || loop?.finish === 'cancelled');
    const result: LoopResult = loop ?? { output: '', steps: [], toolCalls: [], usage: { inputTokens: 0, outputTokens: 0 }, finish: 'cancelled', warnings: [] };
    // The run's warnings: tool sources that could not contribute, then what the provider warned about.
    const warnings = [...(toolSet.warnings ?? []), ...result.warnings];
    return this.finish(runId, tenantId, conversationId, conversationCreatedAt, agent.model, result, cancelled ? 'cancelled' : failure ? 'failed' : 'completed', failure, warnings, startedAtMs);
  }

  private async contributedPrompt(runId: string, ctx: Parameters<SystemPromptContributor>[0]): Promise<string[]> {
    const parts = await Promise.all(
      this.systemPromptContributors.map((contribute) =>
        contribute(ctx).catch((err) => {
          this.log.warn({ err, runId }, 'a system prompt contributor failed; its section is left out');
          return undefined;
        }),
      ),
    );
    return parts.filter((p): p is string => Boolean(p));
  }

  /**
   * Writes the run's end in one transaction: its result, the reply joining the conversation, the
   * conversation released, and the run's last events (the terminal one included), which are
   * published only once committed; the reply and the events go in with the rest of the batch's rows.
   * Exactly one terminal write wins; a run ended elsewhere meanwhile (recovered as interrupted) keeps
   * that end and its followers are told. A run whose start is still queued (startAhead) hands its end
   * to the start, and the two are written as one.
   */
  private async finish(
    runId: string,
    tenantId: string,
    conversationId: string,
    conversationCreatedAt: string,
    model: string,
    result: LoopResult,
    status: 'completed' | 'failed' | 'cancelled',
    failure: RunError | undefined,
    warnings: string[],
    startedAtMs: number,
  ): Promise<RunOutcome | null> {
    const activeRun = this.active.get(runId)!;
    const channel = activeRun.channel;
    const at = now();
    const cost = this.prices.cost(model, result.usage.inputTokens, result.usage.outputTokens);
    const tokenUsage = { inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens };
    const error = status === 'cancelled' ? { code: 'cancelled', message: 'the run was cancelled' } : (failure ?? null);
    const duration = Date.parse(at) - startedAtMs;
    // The reply joins the conversation (a cancelled run's partial reply too); a failed run adds none.
    const reply: conversationStore.MessageRow | null =
      status !== 'failed' && result.output
        ? {
            id: newId(),
            tenant_id: tenantId,
            conversation_id: conversationId,
            run_id: runId,
            role: 'assistant',
            content: result.output,
            tool_calls: result.toolCalls.length ? JSON.stringify(result.toolCalls.map((c) => ({ name: c.name, input: c.input }))) : null,
            token_usage: JSON.stringify(tokenUsage),
            attachments: null,
            created_at: at,
          }
        : null;
    const terminal = status === 'completed' ? { event: 'done', data: { conversationId, runId, cost, tokenUsage } } : { event: 'error', data: { ...error! } };
    const finished: RunFinished = { runId, tenantId, taskId: activeRun.taskId, status, ended: { output: result.output, error }, finishedInTransaction: Boolean(activeRun.onFinish) };
    // The run's last events: whatever the hub has not written yet, and the terminal one. Taken once,
    // when the write first runs (group commit may run it a second time, alone).
    let taken: RunEvent[] | undefined;
    const lastEvents = () => (taken ??= [...channel.takePending(), channel.next(terminal.event, terminal.data)]);
    const end: RunEnd = {
      at,
      reply,
      events: lastEvents,
      patch: {
        status,
        output: result.output,
        error: error ? JSON.stringify(error) : null,
        cost,
        input_tokens: tokenUsage.inputTokens,
        output_tokens: tokenUsage.outputTokens,
        duration_ms: duration,
        tool_calls: JSON.stringify(result.toolCalls),
        steps: JSON.stringify(result.steps),
        warnings: JSON.stringify(warnings),
        completed_at: at,
        lease_owner: null,
        lease_expires_at: null,
      },
    };
    const start = activeRun.start;
    let won = false;
    /** Written with the run's start: it became visible with all its events, so no follower elsewhere waits for them. */
    const folded = start?.phase === 'queued';
    if (folded) {
      // Its start has not been taken by a batch yet: the run is written once, ended (startAhead).
      start.end = end;
      won = await start.written.then(
        () => true,
        () => false,
      );
    } else {
      // A start under way is committed first (startAhead); one that failed leaves nothing to end.
      await start?.written.catch(() => {});
      if (!start?.failed) won = await this.writeEnd(runId, conversationId, conversationCreatedAt, end, activeRun.onFinish, finished);
    }
    if (start?.failed) {
      // The run was never recorded, and its caller was given the error (startAhead).
      channel.takePending();
      this.active.delete(runId);
      await this.events.close(channel);
      return null;
    }
    const last = lastEvents();
    if (won) {
      await channel.written(last, !folded);
    } else {
      // Written by the ordinary path instead, ending with the news that this end did not count.
      last[last.length - 1] = { ...last[last.length - 1], event: 'error', data: { code: 'interrupted', message: 'the run was ended elsewhere before it finished here' } };
      channel.requeue(last);
    }
    this.active.delete(runId);
    await this.events.close(channel);
    if (!won) return null;
    await this.notifyFinished(finished);
    return { runId, conversationId, status, output: result.output, error, cost, tokenUsage, toolCalls: result.toolCalls, duration, reply };
  }

  /**
   * Writes a run's end with a batch of ends: the run's terminal state (only if it is still active:
   * false when it was ended elsewhere), the reply counted and the conversation released, the last
   * events, and the caller's `onFinish`.
   */
  private async writeEnd(
    runId: string,
    conversationId: string,
    conversationCreatedAt: string,
    end: RunEnd,
    onFinish: ActiveRun['onFinish'],
    finished: RunFinished,
  ): Promise<boolean> {
    const write = async (trx: Kysely<Database>, later: DeferredInserts) => {
      const last = end.events();
      const r = await store.finishRun(trx, runId, end.patch);
      if (!Number(r.numUpdatedRows)) return false;
      if (end.reply) {
        later.insert('messages', end.reply);
        // Counted and released in one statement.
        await conversationStore.countMessages(trx, conversationId, 1, end.at, conversationCreatedAt, runId);
      } else {
        await conversationStore.releaseConversation(trx, conversationId, runId);
      }
      for (const row of eventRows(runId, last)) later.insert('run_events', row);
      await onFinish?.(trx, finished);
      return true;
    };
    // An end that meets a database outage (PostgreSQL restarting) is written once the database is back,
    // for as long as the run's lease lasts (it stays active here, so its lease is renewed once the
    // database answers). Given up at once, it would stay `running`, its conversation busy, until the lease
    // expired and another process declared it interrupted (the soak, docs/benchmarks.md).
    const giveUpAt = Date.now() + this.leaseMs;
    for (let waitMs = 250; ; waitMs = Math.min(waitMs * 2, 2000)) {
      try {
        return await this.ends.write(write);
      } catch (err) {
        if (!isDatabaseUnavailable(err) || Date.now() + waitMs > giveUpAt) {
          this.log.error({ err, runId }, 'could not record the end of a run');
          return false;
        }
        if (waitMs === 250) this.log.warn({ runId, cause: (err as Error).message }, 'the end of a run waits for the database');
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }

  // ---------------------------------------------------------------- control

  /** Delivers a message to the run answering in the conversation, at its next step boundary. */
  async inject(tenantId: string, conversationId: string, content: string): Promise<{ runId: string; messageId: string }> {
    const conversation = await conversationStore.findConversation(this.db.kysely, tenantId, conversationId);
    if (!conversation) throw notFound('conversation');
    const runId = conversation.active_run_id;
    if (!runId) throw conflict('no_active_run', 'the agent is not responding in this conversation');
    const run = this.active.get(runId);
    if (run?.closing) throw conflict('no_active_run', 'the agent is finishing its answer; send the message normally');
    if (run) {
      run.inbox.push(content);
    } else {
      // The run executes in another process: it gets the message through the signal bus.
      const row = await store.findRunById(this.db.kysely, runId);
      if (!row || row.status !== 'running') throw conflict('no_active_run', 'the agent is not responding in this conversation');
      await this.bus.publish('run.inject', { runId, content });
    }
    const at = now();
    const messageId = newId();
    await this.db.kysely.transaction().execute(async (trx) => {
      await conversationStore.insertMessage(trx, {
        id: messageId,
        tenant_id: tenantId,
        conversation_id: conversationId,
        run_id: runId,
        role: 'user',
        content,
        tool_calls: null,
        token_usage: null,
        attachments: null,
        created_at: at,
      });
      await conversationStore.countMessages(trx, conversationId, 1, at, conversation.created_at);
    });
    return { runId, messageId };
  }

  /** Cancels a queued or running run; answers the run as it stands afterwards. */
  async cancel(principal: Pick<Principal, 'tenantId' | 'actor' | 'agentId'>, runId: string) {
    const run = await store.findRun(this.db.kysely, principal.tenantId, runId);
    // An agent's own token reaches only that agent's runs.
    if (!run || (principal.agentId !== undefined && run.agent_id !== principal.agentId)) throw notFound('run');
    if (!store.ACTIVE_STATUSES.includes(run.status as 'running')) {
      throw conflict('run_not_active', `the run is already ${run.status}`);
    }
    const local = this.active.get(runId);
    if (local) {
      local.controller.abort(new Error('cancelled'));
      await local.done;
    } else if (run.lease_expires_at && run.lease_expires_at < now()) {
      // Nobody holds it any more: end it here.
      const ended = await this.db.kysely.transaction().execute(async (trx) => {
        const r = await store.finishRun(trx, runId, {
          status: 'cancelled',
          error: JSON.stringify({ code: 'cancelled', message: 'the run was cancelled' }),
          completed_at: now(),
          lease_owner: null,
          lease_expires_at: null,
        });
        if (run.conversation_id) await conversationStore.releaseConversation(trx, run.conversation_id, runId);
        return Number(r.numUpdatedRows) === 1;
      });
      if (ended) await this.notifyFinished({ runId, tenantId: run.tenant_id, taskId: run.task_id, status: 'cancelled' });
    } else {
      // Another process runs it: the signal reaches it at once; the flag, at its next lease renewal.
      await this.db.kysely.updateTable('runs').set({ cancel_requested: 1 }).where('id', '=', runId).execute();
      await this.bus.publish('run.cancel', { runId });
      await this.waitForEnd(runId, this.leaseMs);
    }
    return this.get(principal.tenantId, runId);
  }

  // ---------------------------------------------------------------- reading

  /**
   * How a started run ended: from memory when this process wrote its end, otherwise read back
   * (it was ended elsewhere, e.g. recovered as interrupted).
   */
  async outcome(tenantId: string, handle: RunHandle): Promise<RunOutcome> {
    const written = await handle.done;
    if (written) return written;
    const run = await this.get(tenantId, handle.runId);
    const reply = await conversationStore.findReply(this.db.kysely, tenantId, handle.runId);
    return {
      runId: run.id,
      conversationId: handle.conversationId,
      status: run.status as RunOutcome['status'],
      output: run.output,
      error: run.error,
      cost: run.cost,
      tokenUsage: run.tokenUsage,
      toolCalls: run.toolCalls,
      duration: run.duration ?? 0,
      reply: reply ?? null,
    };
  }

  /** A run; with `agentId` (an agent's own token), only a run of that agent. */
  async get(tenantId: string, runId: string, agentId?: string) {
    const row = await store.findRun(this.db.kysely, tenantId, runId);
    if (!row || (agentId !== undefined && row.agent_id !== agentId)) throw notFound('run');
    return runDetails(row);
  }

  /** An agent's runs, kept after it is deleted; 404 for an agent this tenant never had a run of, nor has. */
  async listForAgent(tenantId: string, agentId: string, page: number, limit: number) {
    const { rows, total } = await store.listAgentRuns(this.db.kysely, tenantId, agentId, limit, (page - 1) * limit);
    if (total === 0) await this.agents.get(tenantId, agentId);
    return { runs: rows.map(runSummary), total, page, limit };
  }

  /** A task's runs, newest first; `status` narrows them (e.g. the latest completed one). */
  async listForTask(tenantId: string, taskId: string, page: number, limit: number, status?: string) {
    const { rows, total } = await store.listTaskRuns(this.db.kysely, tenantId, taskId, limit, (page - 1) * limit, status);
    return { runs: rows.map(runSummary), total, page, limit };
  }

  /**
   * Follows a run's events after `afterSeq`: from memory when it runs here, otherwise from the
   * database (polling while another process still runs it). Calls `listener(null)` at the end.
   */
  async follow(tenantId: string, runId: string, afterSeq: number, listener: RunEventListener): Promise<() => void> {
    // A run executing (or just ended) here is followed from memory, without reading its row.
    const channel = this.events.get(runId);
    if (channel?.tenantId === tenantId) return channel.follow(afterSeq, listener);
    const run = await store.findRun(this.db.kysely, tenantId, runId);
    if (!run) throw notFound('run');

    let stopped = false;
    let last = afterSeq;
    let endedSince = 0;
    let wake: (() => void) | null = null;
    const wakers = this.remoteFollowers.get(runId) ?? new Set<() => void>();
    this.remoteFollowers.set(runId, wakers);
    const onSignal = () => wake?.();
    wakers.add(onSignal);
    const pump = async () => {
      while (!stopped) {
        for (const e of await readStoredEvents(this.db, runId, last)) {
          last = e.seq;
          listener(e);
          if (e.event === 'done' || e.event === 'error') {
            listener(null);
            return;
          }
        }
        // The terminal event is written just after the run row changes; give it a moment, then stop anyway.
        const current = await store.findRunById(this.db.kysely, runId);
        if (!current || !store.ACTIVE_STATUSES.includes(current.status as 'running')) {
          endedSince ||= Date.now();
          if (Date.now() - endedSince > 2_000) {
            listener(null);
            return;
          }
        }
        // Woken by a `run.events` signal; the timeout is the fallback when signals are lost.
        await new Promise<void>((r) => {
          const timer = setTimeout(r, endedSince ? 200 : 1000);
          wake = () => {
            clearTimeout(timer);
            r();
          };
        });
        wake = null;
      }
    };
    const release = () => {
      wakers.delete(onSignal);
      if (!wakers.size) this.remoteFollowers.delete(runId);
    };
    pump()
      .catch((err) => {
        this.log.error({ err, runId }, 'following run events failed');
        listener(null);
      })
      .finally(release);
    return () => {
      stopped = true;
      wake?.();
    };
  }
}

export function isInjected(x: RunHandle | InjectedInstead): x is InjectedInstead {
  return (x as InjectedInstead).injected === true;
}

export { ProblemError };
