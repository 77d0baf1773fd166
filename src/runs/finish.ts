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
      writesPaused: r.db.writesPaused,
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
    const conversationId = ending.conversation.id;
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
    const structuredOutput = result.structuredOutput ?? null;
    const finishReason = runFinishReason(result);
    const error = status === 'cancelled' ? { code: 'cancelled', message: 'the run was cancelled' } : (ending.failure ?? null);
    const duration = Date.parse(at) - ending.startedAtMs;
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
    const terminal =
      status === 'completed'
        ? {
            event: 'done',
            data: { conversationId, runId, cost, tokenUsage, finishReason, ...(structuredOutput ? { structuredOutput } : {}) },
          }
        : { event: 'error', data: { ...error! } };
    const finished: RunFinished = {
      runId,
      tenantId,
      taskId: activeRun.taskId,
      status,
      ended: { output: result.output, error },
      finishedInTransaction: Boolean(activeRun.onFinish),
      awaitedApproval: ending.awaitedApproval,
    };
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
    const start = activeRun.start;
    // A start still on its way is committed first (start.ts, startAhead); one that failed leaves nothing to end.
    await start?.written.catch(() => {});
    const won = start?.failed
      ? false
      : await this.writeEnd({ runId, conversation: ending.conversation, end, onFinish: activeRun.onFinish, finished });
    if (start?.failed) {
      // The run was never recorded, and its caller was given the error (startAhead).
      channel.takePending();
      this.r.active.delete(runId);
      await this.r.events.close(channel);
      return null;
    }
    const last = lastEvents();
    if (won) {
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
    if (!won) return null;
    await this.r.finished.notify(finished);
    return {
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
  }): Promise<boolean> {
    const { runId, end } = w;
    const write = async (trx: Kysely<Database>, later: DeferredInserts) => {
      const last = end.events();
      const r = await store.finishRun(trx, runId, end.patch);
      if (!Number(r.numUpdatedRows)) return false;
      if (end.reply) {
        conversations.deferMessage(later, end.reply);
        // Counted and released in one statement.
        await conversations.countMessages(trx, w.conversation.id, 1, end.at, w.conversation.createdAt, runId);
      } else {
        await conversations.releaseConversation(trx, w.conversation.id, runId);
      }
      store.deferEvents(later, eventRows(runId, last));
      await w.onFinish?.(trx, w.finished);
      return true;
    };
    // An end that meets a database outage (PostgreSQL restarting) is written once the database is
    // back, for as long as the run's lease lasts (it stays active here, so its lease is renewed once
    // the database answers). Given up at once, it would stay `running`, its conversation busy, until
    // the lease expired and another process declared it interrupted.
    const giveUpAt = Date.now() + this.r.leaseMs;
    for (let waitMs = 250; ; waitMs = Math.min(waitMs * 2, 2000)) {
      try {
        return await this.ends.write(write);
      } catch (err) {
        if (!isDatabaseUnavailable(err) || Date.now() + waitMs > giveUpAt) {
          this.r.log.error({ err, runId }, 'could not record the end of a run');
          return false;
        }
        if (waitMs === 250) this.r.log.warn({ runId, cause: (err as Error).message }, 'the end of a run waits for the database');
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }
}
