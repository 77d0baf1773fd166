import type { Agent } from '../agents/schemas.js';
import * as conversations from '../conversations/turns.js';
import { now } from '../ids.js';
import type { LoopResult } from '../runtime/loop.js';
import type { LoopPause, ToolDecision } from '../runtime/tool-approvals.js';
import { DEFAULT_APPROVAL_TIMEOUT_SECONDS } from '../runtime/tools/approval-policy.js';
import { suspensionColumn } from './columns.js';
import { type RunEvent, eventRows } from './events.js';
import type { RunResources } from './resources.js';
import * as store from './store.js';
import type { StartRunInput } from './types.js';
import type { RunError } from './views.js';

/** What resuming a run needs besides its row: its loop's pause and how it was started. */
interface Suspension {
  pause: LoopPause & { result: Omit<LoopResult, 'paused'> };
  run: {
    kind: string;
    actorId: string | null;
    enableTools: boolean;
    maxTokens?: number;
    delegationDepth?: number;
    agentMemoryReadOnly?: boolean;
    startedAtMs: number;
    warnings: string[];
  };
}

/** A paused run claimed by this process, ready to execute again (execute.ts `resume`). */
export interface Resumed {
  input: StartRunInput;
  conversation: conversations.ConversationRow;
  suspension: Suspension;
  decisions: Map<string, ToolDecision>;
  firstSeq: number;
  /** The span the run was started in (runs.traceparent): the resumed run continues that trace. */
  traceparent: string | null;
}

/** Thrown inside a claim's transaction to roll it back: the run is not (or not yet) this process's to resume. */
class NotResumable extends Error {}

/**
 * Runs awaiting approval: pausing one (its state written, the lease given up, the stream told),
 * claiming one again once every waiting call is decided, and cancelling one while it waits.
 */
export class RunPauses {
  constructor(private readonly r: RunResources) {}

  /**
   * Pauses a run whose loop stopped for approval: in one transaction the waiting calls become
   * approvals, the run `awaiting_approval` with its result so far and no lease, its suspension
   * stored, and its events written up to the `approval_required` ones. The stream stays open: its
   * followers go on reading the stored events (follow.ts). Answers `failed` when the pause could
   * not be written (the caller ends the run as failed, its events kept), otherwise the run has left
   * this process (paused, or ended elsewhere meanwhile).
   */
  async pause(p: {
    runId: string;
    input: StartRunInput;
    conversationId: string;
    result: LoopResult;
    warnings: string[];
    startedAtMs: number;
  }): Promise<'paused' | 'ended' | 'failed'> {
    const { runId, input, result } = p;
    const tenantId = input.principal.tenantId;
    const port = this.r.toolApprovals!();
    const activeRun = this.r.active.get(runId)!;
    const channel = activeRun.channel;
    const policy = input.agent.configuration.approval;
    const expiresAt = new Date(this.r.clock.now() + (policy?.timeoutSeconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS) * 1000).toISOString();
    const { paused, ...sofar } = result;
    const waiting = paused!.calls.filter((c) => c.reason !== undefined);
    const suspension: Suspension = {
      pause: { ...paused!, result: sofar },
      run: {
        kind: input.kind,
        actorId: input.principal.actor.id,
        enableTools: input.enableTools ?? true,
        maxTokens: input.maxTokens,
        delegationDepth: input.delegationDepth,
        agentMemoryReadOnly: input.agentMemoryReadOnly,
        startedAtMs: p.startedAtMs,
        warnings: p.warnings,
      },
    };
    let events: RunEvent[] = [];
    const won = await this.r.db.kysely
      .transaction()
      .execute(async (trx) => {
        const ids = await port.request(trx, {
          tenantId,
          agentId: input.agent.id,
          runId,
          conversationId: p.conversationId,
          calls: waiting.map((c) => ({
            toolCallId: c.call.toolCallId,
            name: c.call.toolName,
            arguments: c.call.input,
            reason: c.reason!,
          })),
          expiresAt,
          onTimeout: policy?.onTimeout ?? 'reject',
        });
        const paused = await store.pauseRun(trx, runId, {
          output: sofar.output,
          input_tokens: sofar.usage.inputTokens,
          output_tokens: sofar.usage.outputTokens,
          tool_calls: JSON.stringify(sofar.toolCalls),
          steps: JSON.stringify(sofar.steps),
          warnings: JSON.stringify(p.warnings),
        });
        if (!paused) throw new NotResumable();
        await store.insertSuspension(trx, { run_id: runId, tenant_id: tenantId, state: JSON.stringify(suspension), created_at: now() });
        events = [
          ...channel.takePending(),
          ...waiting.map((c, i) =>
            channel.next('approval_required', {
              approvalId: ids[i],
              toolCall: { id: c.call.toolCallId, name: c.call.toolName, arguments: c.call.input },
              reason: c.reason!,
              expiresAt,
            }),
          ),
        ];
        await store.insertEvents(trx, eventRows(runId, events));
        return true;
      })
      .catch((err) => {
        if (err instanceof NotResumable) return false;
        this.r.log.error({ err, runId }, 'a run could not be paused for approval');
        return undefined;
      });
    if (won === undefined) {
      // Nothing was written: the events go back, the approval_required ones dropped, and the run ends as failed.
      channel.requeue(events.filter((e) => e.event !== 'approval_required'));
      return 'failed';
    }
    if (won) {
      await channel.written(events);
      channel.paused = true;
    } else {
      // Ended elsewhere meanwhile (recovered as interrupted): its followers are told, as finish does.
      channel.requeue([...events.filter((e) => e.event !== 'approval_required'), channel.next('error', interruptedElsewhere)]);
    }
    this.r.active.delete(runId);
    await this.r.events.close(channel);
    if (won) this.r.log.info({ runId, calls: waiting.length }, 'run awaits approval');
    return won ? 'paused' : 'ended';
  }

  /**
   * Claims a run awaiting approval once every waiting call is decided: `running` again under this
   * process's lease, its decisions taken and its suspension removed, in one transaction; null when it
   * is not resumable (still waiting, claimed elsewhere, ended).
   */
  async claim(runId: string): Promise<Resumed | null> {
    if (this.r.active.has(runId) || !this.r.toolApprovals) return null;
    const port = this.r.toolApprovals();
    const until = new Date(Date.now() + this.r.leaseMs).toISOString();
    const claimed = await this.r.db.kysely
      .transaction()
      .execute(async (trx) => {
        if (!(await store.claimPausedRun(trx, runId, this.r.instanceId, until))) throw new NotResumable();
        const decisions = await port.take(trx, runId);
        const row = await store.findSuspension(trx, runId);
        if (!decisions || !row) throw new NotResumable();
        await store.deleteSuspension(trx, runId);
        const run = (await store.findRunById(trx, runId))!;
        return { run, decisions, suspension: suspensionColumn(row.state) as unknown as Suspension };
      })
      .catch((err) => {
        if (err instanceof NotResumable) return null;
        throw err;
      });
    if (!claimed) return null;
    const { run, decisions, suspension } = claimed;
    const firstSeq = (await store.lastEvent(this.r.db.kysely, runId)).seq + 1;
    let agent: Agent;
    let conversation: conversations.ConversationRow | undefined;
    try {
      agent = await this.r.agents.get(run.tenant_id, run.agent_id);
      conversation = run.conversation_id
        ? await conversations.findConversation(this.r.db.kysely, run.tenant_id, run.conversation_id)
        : undefined;
      if (!conversation) throw new Error('the run’s conversation is gone');
    } catch (err) {
      // Nothing left to resume it with (the agent or its conversation was deleted while it waited).
      this.r.log.warn({ err, runId }, 'a run awaiting approval could not resume');
      await this.endPaused(
        run,
        'failed',
        { code: 'not_resumable', message: 'the agent or the conversation was deleted while the run waited' },
        'running',
      );
      return null;
    }
    const s = suspension.run;
    const input: StartRunInput = {
      principal: { tenantId: run.tenant_id, actor: { id: s.actorId } },
      agent,
      kind: s.kind as StartRunInput['kind'],
      content: '',
      enableTools: s.enableTools,
      maxTokens: s.maxTokens,
      delegationDepth: s.delegationDepth,
      agentMemoryReadOnly: s.agentMemoryReadOnly,
      taskId: run.task_id ?? undefined,
    };
    return { input, conversation, suspension, decisions, firstSeq, traceparent: run.traceparent ?? null };
  }

  /** Cancels a run while it awaits approval; false when it was claimed (or ended) meanwhile. */
  cancel(run: store.RunRow): Promise<boolean> {
    return this.endPaused(run, 'cancelled', { code: 'cancelled', message: 'the run was cancelled' }, 'awaiting_approval');
  }

  /**
   * Ends a paused run (cancelled while it waits, or failed when it cannot resume): its row, the
   * conversation released, the suspension removed and the closing event, in one transaction.
   */
  private async endPaused(run: store.RunRow, status: 'cancelled' | 'failed', error: RunError, from: 'awaiting_approval' | 'running') {
    const at = now();
    const seq = (await store.lastEvent(this.r.db.kysely, run.id)).seq + 1;
    const patch = {
      status,
      error: JSON.stringify(error),
      completed_at: at,
      duration_ms: run.started_at ? Date.parse(at) - Date.parse(run.started_at) : null,
      lease_owner: null,
      lease_expires_at: null,
    };
    const ended = await this.r.db.kysely.transaction().execute(async (trx) => {
      const done =
        from === 'awaiting_approval'
          ? await store.endPausedRun(trx, run.id, patch)
          : Number((await store.finishRun(trx, run.id, patch)).numUpdatedRows) === 1;
      if (!done) return false;
      if (run.conversation_id) await conversations.releaseConversation(trx, run.conversation_id, run.id);
      await store.deleteSuspension(trx, run.id);
      await store.insertEvents(trx, [{ run_id: run.id, seq, event: 'error', data: JSON.stringify(error) }]);
      return true;
    });
    if (!ended) return false;
    // Followers on every replica read the closing event now rather than at their next poll.
    this.r.events.published(run.id, seq);
    await this.r.finished.notify({
      runId: run.id,
      tenantId: run.tenant_id,
      taskId: run.task_id,
      status,
      ended: { output: run.output, error },
    });
    return true;
  }
}

const interruptedElsewhere = { code: 'interrupted', message: 'the run was ended elsewhere before it finished here' };
