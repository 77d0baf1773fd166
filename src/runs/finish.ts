import { citationsOf } from './citations.js';
import type { Kysely } from 'kysely';
import * as conversations from '../conversations/turns.js';
import { type DeferredInserts, GroupCommit } from '../db/group-commit.js';
import type { Database } from '../db/schema.js';
import { isDatabaseUnavailable } from '../errors.js';
import { newId, now } from '../ids.js';
import type { LoopResult } from '../runtime/loop.js';
import { type RunEvent, eventRows } from './events.js';
import { stepsCost } from './fallbacks.js';
import type { ActiveRun, RunEnd, RunResources } from './resources.js';
import type { TerminalStatus } from './statuses.js';
import { stepsToStore, toolCallsToStore } from './steps.js';
import * as store from './store.js';
import type { RunFinished, RunOutcome } from './types.js';
import type { RunError } from './views.js';

/** Failures that leave no partial answer in the conversation: the text was said, but was not the answer asked for. */
const KEPT_WHOLE_OR_NOT_AT_ALL = new Set(['invalid_output']);

/**
 * What a failed run leaves in its conversation: the text streamed before the failure, then a note in
 * the reply itself (the history replays a message's content as the model's own words), or nothing
 * when nothing was said (docs/models.md "A stream cut after its first token").
 */
function cutOffReply(output: string, error: RunError | null): string {
  if (!output || !error || KEPT_WHOLE_OR_NOT_AT_ALL.has(error.code)) return '';
  return `${output}\n\n[answer cut off: ${error.code}]`;
}

/**
 * Why the run's model stopped: its last answered step's finish reason (stop, length, content-filter,
 * tool-calls...), max_steps when the loop ran out of steps, null when no step answered.
 */
function runFinishReason(result: LoopResult): string | null {
  if (result.finish === 'max_steps') return 'max_steps';
  const last = result.steps.at(-1);
  return last?.completedAt ? last.finishReason : null;
}

/**
 * Ends per transaction at most (group commit). Larger batches save commits but hold up the requests
 * that arrive meanwhile (the first streamed token waits behind them; docs/benchmarks-history.md).
 */
const ENDS_PER_COMMIT = 8;
/** Batches of ends written at once on PostgreSQL (each takes a pooled connection while it runs). */
const POSTGRES_BATCHES_AT_ONCE = 4;

/** What the caller of a run is told when its end could be recorded only as this failure. */
const RESULT_UNRECORDED: RunError = {
  code: 'result_unrecorded',
  message: 'the run’s result could not be recorded, so the run failed; the error is in the server log',
};

/** What the followers of a run are told when not even its failure could be recorded. */
const END_UNRECORDED: RunError = {
  code: 'run_end_unrecorded',
  message: 'the run’s end could not be recorded; it is ended as interrupted once its lease expires',
};

/**
 * How a run's end write went: written, lost to another end (recovered as interrupted meanwhile),
 * refused (by the database for another reason than an outage, or not serialisable), or unreachable
 * (the database away for longer than the run's lease).
 */
type EndWritten = 'written' | 'lost' | 'refused' | 'unreachable';

/** What a run's end counts, computed once for whichever end is written. */
interface Counted {
  cost: number;
  tokenUsage: { inputTokens: number; outputTokens: number };
  duration: number;
}

/** An end to write, and what the run's caller is answered once it is written. */
interface WholeEnd {
  end: RunEnd;
  outcome: RunOutcome;
}

/** How the tool loop left a run: what `finish` writes. */
export interface Ending {
  runId: string;
  tenantId: string;
  conversation: { id: string; createdAt: string };
  model: string;
  result: LoopResult;
  status: TerminalStatus;
  failure: RunError | undefined;
  warnings: string[];
  startedAtMs: number;
  /** Each tool's source by name (the run's ToolSet), recorded with its calls. */
  toolSources?: ReadonlyMap<string, string>;
  /** The model that summarised the run's history (runs/context.ts): its calls are priced at its price. */
  summaryModel?: string;
  /** Whether the run waited for approval at any point (resumed after one, or its pause failed). */
  awaitedApproval: boolean;
}

/**
 * Finishing a run: its terminal state, cost, the reply joining the conversation, the conversation
 * released and the last events, in one transaction shared with other runs' ends.
 */
export class RunFinish {
  /** Runs' ends, written several to a transaction behind the requests waiting to be served. */
  private readonly ends: GroupCommit;

  constructor(private readonly r: RunResources) {
    this.ends = new GroupCommit(r.db.kysely, {
      maxBatch: ENDS_PER_COMMIT,
      concurrency: r.db.dialect === 'postgres' ? POSTGRES_BATCHES_AT_ONCE : 1,
      // The streams' tokens go out before a batch of ends is written, not behind it: written, then
      // a turn of the event loop so they leave the sockets (SSE writes are corked per tick).
      beforeBatch: async () => {
        if (await r.events.flush()) await new Promise<void>((resolve) => setImmediate(resolve));
      },
    });
  }

  /**
   * Writes the run's end in one transaction: its result, the reply joining the conversation, the
   * conversation released, and the run's last events (the terminal one included), which are
   * published only once committed; the reply and the events go in with the rest of the batch's rows.
   * Exactly one terminal write wins; a run ended elsewhere meanwhile (recovered as interrupted) keeps
   * that end and its followers are told.
   */
  async finish(ending: Ending): Promise<RunOutcome | null> {
    const { runId, tenantId, result, status } = ending;
    const activeRun = this.r.active.get(runId)!;
    const channel = activeRun.channel;
    const at = now();
    // Summarising the history counts in the run: its tokens, at the summary model's price (runtime/context/fit.ts).
    const summary = result.summaryUsage ?? { inputTokens: 0, outputTokens: 0 };
    const summaryCost = this.r.prices.cost(ending.summaryModel ?? ending.model, summary.inputTokens, summary.outputTokens);
    // Each step priced at the model that answered it (a fallback's, when the agent's own model failed).
    const cost = Math.round((stepsCost(this.r.prices, ending.model, result.steps) + summaryCost) * 1e9) / 1e9;
    const tokenUsage = {
      inputTokens: result.usage.inputTokens + summary.inputTokens,
      outputTokens: result.usage.outputTokens + summary.outputTokens,
    };
    const duration = Date.parse(at) - ending.startedAtMs;
    const counted = { cost, tokenUsage, duration };
    const finishedAs = (status: TerminalStatus, error: RunError | null): RunFinished => ({
      runId,
      tenantId,
      taskId: activeRun.taskId,
      status,
      ended: { output: result.output, error },
      finishedInTransaction: Boolean(activeRun.onFinish),
      awaitedApproval: ending.awaitedApproval,
    });
    const write = (end: RunEnd, finished: RunFinished) =>
      this.writeEnd({ runId, conversation: ending.conversation, end, onFinish: activeRun.onFinish, finished });

    let ended: WholeEnd | undefined;
    let written: EndWritten = 'refused';
    try {
      ended = this.wholeEnd(ending, at, counted);
    } catch (err) {
      // A value no bound stopped (src/json-bounds.ts) cannot be serialised: the smaller end below.
      this.r.log.error({ err, runId }, 'the end of a run could not be serialised');
    }
    let finished = ended ? finishedAs(status, ended.outcome.error) : undefined;
    if (ended && finished) written = await write(ended.end, finished);
    if (written === 'refused') {
      // The end as it was could not be recorded (refused by the database, or not serialisable): the run
      // fails instead, in an end holding nothing of its result but its text. Its caller is told, and a
      // later reader finds it failed rather than running.
      ended = this.unrecordedEnd(ending, at, counted);
      finished = finishedAs('failed', ended.outcome.error);
      written = await write(ended.end, finished);
    }
    if (written === 'refused' || written === 'unreachable') {
      this.r.log.error({ runId }, 'the end of a run could not be recorded: it is left to recovery once its lease expires');
      await this.abandon(runId);
      return null;
    }
    const last = ended!.end.events();
    if (written === 'written') {
      await channel.written(last);
    } else {
      // Written by the ordinary path instead, ending with the news that this end did not count.
      last[last.length - 1] = {
        ...last[last.length - 1],
        event: 'error',
        data: { code: 'interrupted', message: 'the run was ended elsewhere before it finished here' },
      };
      channel.requeue(last);
    }
    this.r.active.delete(runId);
    await this.r.events.close(channel);
    if (written !== 'written') return null;
    await this.r.finished.notify(finished!);
    return ended!.outcome;
  }

  /**
   * Gives up a run executing here whose end cannot be recorded. Its row stays running until its lease
   * (no longer renewed here) expires and recovery ends it as interrupted, on any replica; a caller
   * waiting for its result is answered a 503 (service.ts `outcome`), and whoever follows its stream is
   * told now, with an error event that is not stored (a replay later gets recovery's).
   */
  async abandon(runId: string): Promise<void> {
    const activeRun = this.r.active.get(runId);
    if (!activeRun) return;
    const channel = activeRun.channel;
    channel.takePending();
    if (!channel.ended) channel.publish([channel.next('error', { ...END_UNRECORDED })], false);
    this.r.active.delete(runId);
    await this.r.events.close(channel);
  }

  /**
   * The run's whole end: its result, the reply joining the conversation, and its last events (whatever
   * the hub has not written yet, and the terminal one: taken once, when the write first runs; group
   * commit may run it a second time, alone). Throws when a value in it cannot be serialised.
   */
  private wholeEnd(ending: Ending, at: string, counted: Counted): WholeEnd {
    const { runId, tenantId, result, status } = ending;
    const conversationId = ending.conversation.id;
    const channel = this.r.active.get(runId)!.channel;
    const { cost, tokenUsage, duration } = counted;
    const structuredOutput = result.structuredOutput ?? null;
    const finishReason = runFinishReason(result);
    const error = status === 'cancelled' ? { code: 'cancelled', message: 'the run was cancelled' } : (ending.failure ?? null);
    // The reply joins the conversation (a cancelled run's partial reply too). A failed run's joins only
    // when its answer broke off part-way, marked so that the next turn's model knows it was cut.
    const content = status === 'failed' ? cutOffReply(result.output, error) : result.output;
    const reply: conversations.MessageRow | null = content
      ? {
          id: newId(),
          tenant_id: tenantId,
          conversation_id: conversationId,
          run_id: runId,
          role: 'assistant',
          content,
          // With ids and results: the history gives them back to the model (runs/context.ts).
          tool_calls: result.toolCalls.length
            ? JSON.stringify(result.toolCalls.map((c) => ({ id: c.id, name: c.name, input: c.input, result: c.result })))
            : null,
          token_usage: JSON.stringify(tokenUsage),
          attachments: null,
          created_at: at,
        }
      : null;
    const citations = citationsOf(result.toolCalls);
    const terminal =
      status === 'completed'
        ? {
            event: 'done',
            data: {
              conversationId,
              runId,
              cost,
              tokenUsage,
              finishReason,
              ...(structuredOutput ? { structuredOutput } : {}),
              ...(citations.length ? { citations } : {}),
            },
          }
        : { event: 'error', data: { ...error! } };
    let taken: RunEvent[] | undefined;
    const end: RunEnd = {
      at,
      reply,
      events: () => (taken ??= [...channel.takePending(), channel.next(terminal.event, terminal.data)]),
      patch: {
        status,
        output: result.output,
        error: error ? JSON.stringify(error) : null,
        cost,
        input_tokens: tokenUsage.inputTokens,
        output_tokens: tokenUsage.outputTokens,
        duration_ms: duration,
        tool_calls: JSON.stringify(toolCallsToStore(result.toolCalls, ending.toolSources)),
        steps: JSON.stringify(stepsToStore(result.steps, ending.model, this.r.prices)),
        structured_output: structuredOutput ? JSON.stringify(structuredOutput) : null,
        warnings: JSON.stringify(ending.warnings),
        finish_reason: finishReason,
        context_truncated: result.contextTruncated ? 1 : 0,
        completed_at: at,
        lease_owner: null,
        lease_expires_at: null,
      },
    };
    const outcome: RunOutcome = {
      runId,
      conversationId,
      status,
      output: result.output,
      structuredOutput,
      finishReason,
      error,
      cost,
      tokenUsage,
      toolCalls: result.toolCalls,
      duration,
      reply,
    };
    return { end, outcome };
  }

  /**
   * The end of a run whose whole end could not be recorded: failed with `result_unrecorded`, its text,
   * cost and warnings kept, no reply (the conversation is released), no tool calls or steps, and one
   * event, the error (the events not yet written are dropped: they may be what could not be stored).
   */
  private unrecordedEnd(ending: Ending, at: string, counted: Counted): WholeEnd {
    const { runId, result } = ending;
    const channel = this.r.active.get(runId)!.channel;
    const { cost, tokenUsage, duration } = counted;
    let taken: RunEvent[] | undefined;
    const end: RunEnd = {
      at,
      reply: null,
      events: () => {
        if (!taken) {
          channel.takePending();
          taken = [channel.next('error', { ...RESULT_UNRECORDED })];
        }
        return taken;
      },
      patch: {
        status: 'failed',
        output: result.output,
        error: JSON.stringify(RESULT_UNRECORDED),
        cost,
        input_tokens: tokenUsage.inputTokens,
        output_tokens: tokenUsage.outputTokens,
        duration_ms: duration,
        tool_calls: '[]',
        steps: '[]',
        structured_output: null,
        warnings: JSON.stringify(ending.warnings),
        completed_at: at,
        lease_owner: null,
        lease_expires_at: null,
      },
    };
    const outcome: RunOutcome = {
      runId,
      conversationId: ending.conversation.id,
      status: 'failed',
      output: result.output,
      structuredOutput: null,
      finishReason: null,
      error: RESULT_UNRECORDED,
      cost,
      tokenUsage,
      toolCalls: [],
      duration,
      reply: null,
    };
    return { end, outcome };
  }

  /**
   * Writes a run's end with a batch of ends: the run's terminal state (only if it is still active:
   * false when it was ended elsewhere), the reply counted and the conversation released, the last
   * events, and the caller's `onFinish`.
   */
  private async writeEnd(w: {
    runId: string;
    conversation: Ending['conversation'];
    end: RunEnd;
    onFinish: ActiveRun['onFinish'];
    finished: RunFinished;
  }): Promise<EndWritten> {
    const { runId, end } = w;
    // The conversation's message count with the reply, as the committed write left it.
    let messageCount: number | undefined;
    const write = async (trx: Kysely<Database>, later: DeferredInserts): Promise<EndWritten> => {
      // Serialised first: an event that cannot be fails the write before anything is sent.
      const rows = eventRows(runId, end.events());
      const r = await store.finishRun(trx, runId, end.patch);
      if (!Number(r.numUpdatedRows)) return 'lost';
      if (end.reply) {
        conversations.deferMessage(later, end.reply);
        // Counted and released in one statement.
        messageCount = await conversations.countMessages(trx, w.conversation.id, {
          added: 1,
          at: end.at,
          createdAt: w.conversation.createdAt,
          releaseRunId: runId,
        });
      } else {
        await conversations.releaseConversation(trx, w.conversation.id, runId);
      }
      store.deferEvents(later, rows);
      await w.onFinish?.(trx, w.finished);
      return 'written';
    };
    // An end that meets a database outage (PostgreSQL restarting) is written once the database is
    // back, for as long as the run's lease lasts (it stays active here, so its lease is renewed once
    // the database answers). Given up at once, it would stay `running`, its conversation busy, until
    // the lease expired and another process declared it interrupted.
    const giveUpAt = Date.now() + this.r.leaseMs;
    for (let waitMs = 250; ; waitMs = Math.min(waitMs * 2, 2000)) {
      try {
        const written = await this.ends.write(write);
        if (written === 'written' && end.reply && messageCount !== undefined) {
          this.r.recent.added(w.conversation.id, messageCount, conversations.historyMessage(end.reply));
        }
        return written;
      } catch (err) {
        if (!isDatabaseUnavailable(err)) {
          this.r.log.error({ err, runId }, 'could not record the end of a run');
          return 'refused';
        }
        if (Date.now() + waitMs > giveUpAt) {
          this.r.log.error({ err, runId }, 'could not record the end of a run: the database stayed away');
          return 'unreachable';
        }
        if (waitMs === 250) this.r.log.warn({ runId, cause: (err as Error).message }, 'the end of a run waits for the database');
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }
}
