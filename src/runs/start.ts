import type { Kysely } from 'kysely';
import type { Agent } from '../agents/schemas.js';
import * as conversations from '../conversations/turns.js';
import { type DeferredInserts, GroupCommit } from '../db/group-commit.js';
import type { Database } from '../db/schema.js';
import { BudgetExceeded, Conflict, LimitExceeded, NotFound } from '../errors.js';
import { newId, now } from '../ids.js';
import type { RunControl } from './control.js';
import type { RunExecution } from './execute.js';
import type { RunResources } from './resources.js';
import { worstCaseCost } from './reservation.js';
import { type RunStart, startRows } from './start-rows.js';
import * as store from './store.js';
import type { InjectedInstead, OnActiveRun, RunHandle, StartRunInput } from './types.js';

/** How long a start with onActiveRun `enqueue` waits for the conversation at most (the idempotency claims outlast it: app.ts). */
export const ENQUEUE_WAIT_MS = 10 * 60_000;
/** Runs' starts per transaction at most (group commit): starts are what new requests wait for, all of them. */
const STARTS_PER_COMMIT = 64;
/** Batches of starts written at once on PostgreSQL (each takes a pooled connection while it runs). */
const POSTGRES_BATCHES_AT_ONCE = 4;

type HistoryMessage = conversations.HistoryMessage;
/** A written start: the conversation, the history the model is given, and the conversation's message count with the user's message. */
type StartedRun = { conversation: conversations.ConversationRow; history: readonly HistoryMessage[]; messageCount: number };
/** What a run's start answers once written, or the refusal of its admission (nothing was written). */
type StartWritten = StartedRun | { refused: LimitExceeded | BudgetExceeded };

/** Refuses to start a run of an agent that is paused or hosted elsewhere. */
export function executable(agent: Agent) {
  if (agent.status === 'paused') throw new Conflict('agent_paused', 'the agent is paused; resume it to execute');
  if (agent.hosting === 'external' || agent.status === 'registered') {
    throw new Conflict('agent_not_executable', 'the agent is hosted elsewhere (registered) and cannot be executed here');
  }
}

/**
 * Starting runs: admission, the conversation claimed (or born), the user's message and the run row
 * in one transaction, group-committed with other runs' starts; then the run is handed to execution.
 */
export class RunStarts {
  /** Runs' starts, written together when several requests arrived in the same turn. */
  private readonly starts: GroupCommit;
  /**
   * Starts of runs under a tenant's concurrency limit or a budget, each admitted in the transaction
   * that inserts it; one batch at a time, as admissions hold a lock until they commit.
   */
  private readonly admittedStarts: GroupCommit;
  private readonly admissions = new WeakMap<DeferredInserts, unknown>();

  constructor(
    private readonly r: RunResources,
    private readonly systems: { execution: RunExecution; control: RunControl },
  ) {
    this.starts = new GroupCommit(r.db.kysely, {
      maxBatch: STARTS_PER_COMMIT,
      concurrency: r.db.dialect === 'postgres' ? POSTGRES_BATCHES_AT_ONCE : 1,
    });
    this.admittedStarts = new GroupCommit(r.db.kysely, { maxBatch: STARTS_PER_COMMIT, concurrency: 1 });
  }

  async start(input: StartRunInput): Promise<RunHandle | InjectedInstead> {
    executable(input.agent);
    const tenantId = input.principal.tenantId;
    // Null when no limit or budget applies: then the start is group-committed with no admission at all.
    const limits = await this.r.admission.runLimits(tenantId, input.agent.id);
    const runId = newId();
    let at = now();
    let conversationId = input.conversationId;
    let conversation: conversations.ConversationRow | undefined;

    if (conversationId) {
      conversation = input.conversation ?? (await conversations.findConversation(this.r.db.kysely, tenantId, conversationId));
      if (!conversation) throw new NotFound('conversation');
      if (conversation.agent_id !== input.agent.id) {
        throw new Conflict('conversation_agent_mismatch', 'the conversation belongs to another agent');
      }
      // A conversation is one user's for good: another user's memory must not reach it.
      if (input.userId !== undefined && input.userId !== conversation.user_id) {
        throw new Conflict('conversation_user_mismatch', 'the conversation is with another user (userId) or with none named');
      }
      if (conversation.status !== 'active')
        throw new Conflict(
          'conversation_not_active',
          `the conversation is ${conversation.status}; only active conversations take messages`,
        );
    }

    let history: readonly HistoryMessage[] = [];
    let userMessageId = newId();
    const traceparent = this.r.tracing?.traceparent(input.trace);
    const options = {
      enableTools: input.enableTools ?? true,
      maxTokens: input.maxTokens ?? null,
      onActiveRun: input.onActiveRun ?? null,
      budget: {},
    };
    const reservedUsd = worstCaseCost(this.r.prices, input);
    const policy = input.onActiveRun ?? input.agent.configuration.onActiveRun;
    const deadline = Date.now() + ENQUEUE_WAIT_MS;

    // One transaction starts the run: an existing conversation is claimed (and its new message counted)
    // in it, and its history read after the claim, so no answer that ended meanwhile is missed. A busy
    // conversation writes nothing; the agent's policy then injects, waits or refuses.
    for (;;) {
      const started = await this.startTransaction(
        { input, runId, at, userMessageId, options, reservedUsd, traceparent },
        { existing: conversation, limits },
      );
      if (started) {
        ({ conversation, history } = started);
        // Committed: the next start in this conversation finds its history here (recent-messages.ts).
        const { messageCount } = started;
        this.r.recent.keep(conversation.id, input.agent.configuration.memoryWindow, messageCount - 1, history);
        this.r.recent.added(conversation.id, messageCount, { id: userMessageId, role: 'user', content: input.content, tool_calls: null });
        break;
      }
      const instead = await this.whenBusy({ tenantId, conversationId: conversationId!, input, policy, deadline });
      if (instead) return instead;
      // After waiting, the message comes after the answer that was running: a new id and time.
      at = now();
      userMessageId = newId();
    }
    conversationId = conversation!.id;

    const activeRun = this.systems.execution.launch({
      input,
      runId,
      conversation: conversation!,
      history,
      at,
      channel: this.r.events.open(runId, tenantId),
    });
    return { runId, conversationId: conversationId!, userMessageId, startedAt: at, done: activeRun.done };
  }

  /**
   * The run's start, in one transaction (shared with the other starts of the same turn of the event
   * loop: group commit): a new conversation born holding the run and its first message, or an
   * existing one claimed (its new message counted in the same statement) and its history read; the
   * user's message; the run; the caller's `onStart`. The new rows go in with the other starts' rows,
   * one INSERT per table for the batch. Answers the conversation and the history the model is given.
   * Answers null, having written nothing, when another run holds the conversation.
   */
  private async startTransaction(
    run: RunStart,
    w: { existing: conversations.ConversationRow | undefined; limits: unknown },
  ): Promise<StartedRun | null> {
    const { input, runId, at } = run;
    const { existing, limits } = w;
    const tenantId = input.principal.tenantId;
    const agentId = input.agent.id;
    const write = async (trx: Kysely<Database>, later: DeferredInserts): Promise<StartWritten | null> => {
      // Counted and claimed in this transaction: the run row it inserts (its worst-case cost with it) is the reservation. A refusal
      // is an answer (nothing written yet), so the other starts of the batch go ahead.
      let batch: unknown;
      if (limits) {
        batch = this.admissionOf(later);
        try {
          run.options.budget = await this.r.admission.admit(trx, { batch, tenantId, agentId, limits, reservedUsd: run.reservedUsd });
        } catch (err) {
          if (err instanceof LimitExceeded || err instanceof BudgetExceeded) return { refused: err };
          throw err;
        }
      }
      let history: readonly HistoryMessage[] = [];
      let messageCount = 1;
      if (existing) {
        const claimed = await conversations.claimConversation(trx, tenantId, existing.id, { runId, at, createdAt: existing.created_at });
        if (claimed === null) {
          if (limits) this.r.admission.withdraw(batch, { tenantId, agentId, reservedUsd: run.reservedUsd });
          return null;
        }
        messageCount = claimed;
        const window = input.agent.configuration.memoryWindow;
        // The messages before the user's, kept by an earlier start or end here while the count was theirs.
        history = this.r.recent.find(existing.id, window, claimed - 1) ?? (await conversations.history(trx, tenantId, existing.id, window));
      }
      const rows = startRows(run, { existing, lease: { owner: this.r.instanceId, ms: this.r.leaseMs } });
      if (rows.conversation) conversations.deferConversation(later, rows.conversation);
      conversations.deferMessage(later, rows.message);
      store.deferRun(later, rows.run);
      await input.onStart?.(trx, { runId, startedAt: at });
      return { conversation: rows.conversation ?? existing!, history, messageCount };
    };
    // Starts to admit have batches of their own, so the others' never wait for an admission's lock.
    const written = await (limits ? this.admittedStarts : this.starts).write(write);
    if (written && 'refused' in written) throw written.refused;
    return written;
  }

  /** The admissions of the transaction `later` belongs to (one DeferredInserts per transaction). */
  private admissionOf(later: DeferredInserts): unknown {
    if (!this.admissions.has(later)) this.admissions.set(later, this.r.admission.newBatch());
    return this.admissions.get(later);
  }

  /**
   * The conversation was busy: applies the agent's policy. Answers the injection when the message
   * went to the running answer, undefined to try the start again (the run ended; `enqueue` waited
   * for it), or throws (refused, waited too long, the conversation is gone or no longer active).
   */
  private async whenBusy(b: {
    tenantId: string;
    conversationId: string;
    input: StartRunInput;
    policy: OnActiveRun;
    deadline: number;
  }): Promise<InjectedInstead | undefined> {
    const { tenantId, conversationId } = b;
    const current = await conversations.findConversation(this.r.db.kysely, tenantId, conversationId);
    if (!current) throw new NotFound('conversation');
    if (current.status !== 'active') throw new Conflict('conversation_not_active', `the conversation is ${current.status}`);
    if (!current.active_run_id) return undefined;
    if (b.policy === 'inject') {
      // An injected message joins the running run, whose answer has no shape of its own to give it.
      if (b.input.responseFormat) {
        throw new Conflict(
          'conversation_busy',
          'the agent is still answering in this conversation, and a message with a responseFormat needs a run of its own: wait, or set onActiveRun to enqueue',
        );
      }
      const injected = await this.systems.control.inject({ tenantId, conversationId, content: b.input.content });
      return { injected: true, ...injected, conversationId };
    }
    if (b.policy !== 'enqueue' || Date.now() > b.deadline) {
      throw new Conflict('conversation_busy', 'the agent is still answering in this conversation; wait, inject, or set onActiveRun');
    }
    await this.systems.control.waitForEnd(current.active_run_id, b.deadline - Date.now());
    return undefined;
  }
}
