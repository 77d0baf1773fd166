import * as conversations from '../conversations/turns.js';
import { Conflict, NotFound } from '../errors.js';
import { newId, now } from '../ids.js';
import type { RunPauses } from './pause.js';
import type { RunResources } from './resources.js';
import { isActive } from './statuses.js';
import * as store from './store.js';
import type { RunPrincipal } from './types.js';

/**
 * Controlling a run that is under way, here or in another process: a message injected at its next
 * step boundary, a cancel, waiting for its end.
 */
export class RunControl {
  constructor(
    private readonly r: RunResources,
    private readonly pauses: RunPauses,
  ) {}

  /** Delivers a message to the run answering in the conversation, at its next step boundary. */
  async inject(m: { tenantId: string; conversationId: string; content: string }): Promise<{ runId: string; messageId: string }> {
    const { tenantId, conversationId, content } = m;
    const conversation = await conversations.findConversation(this.r.db.kysely, tenantId, conversationId);
    if (!conversation) throw new NotFound('conversation');
    const runId = conversation.active_run_id;
    if (!runId) throw new Conflict('no_active_run', 'the agent is not responding in this conversation');
    const run = this.r.active.get(runId);
    if (run?.closing) throw new Conflict('no_active_run', 'the agent is finishing its answer; send the message normally');
    if (run) {
      run.inbox.push(content);
    } else {
      // The run executes in another process: it gets the message through the signal bus.
      const row = await store.findRunById(this.r.db.kysely, runId);
      if (row?.status === 'awaiting_approval')
        throw new Conflict(
          'run_awaiting_approval',
          `the agent's run ${runId} waits for a person to approve a tool call (GET /api/v1/approvals); send the message once it has ended`,
        );
      if (row?.status !== 'running') throw new Conflict('no_active_run', 'the agent is not responding in this conversation');
      await this.r.bus.publish('run.inject', { runId, content });
    }
    this.r.observer?.injected();
    const at = now();
    const messageId = newId();
    const message = {
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
    };
    const messageCount = await this.r.db.kysely.transaction().execute(async (trx) => {
      await conversations.insertMessage(trx, message);
      return conversations.countMessages(trx, conversationId, { added: 1, at, createdAt: conversation.created_at });
    });
    if (messageCount !== undefined) this.r.recent.added(conversationId, messageCount, conversations.historyMessage(message));
    return { runId, messageId };
  }

  /** Cancels a queued or running run, here, through the row, or in another process; waits for its end there. */
  async cancel(principal: Pick<RunPrincipal, 'tenantId' | 'agentId'>, runId: string): Promise<void> {
    const run = await store.findRun(this.r.db.kysely, principal.tenantId, runId);
    // An agent's own token reaches only that agent's runs.
    if (!run || (principal.agentId !== undefined && run.agent_id !== principal.agentId)) throw new NotFound('run');
    if (!isActive(run.status)) throw new Conflict('run_not_active', `the run is already ${run.status}`);
    this.r.observer?.cancelled();
    if (run.status === 'awaiting_approval' && !this.r.active.has(runId)) {
      // Nobody holds a run waiting for a person: it ends here, unless a process claimed it meanwhile.
      if (await this.pauses.cancel(run)) return;
      return this.cancel(principal, runId);
    }
    const local = this.r.active.get(runId);
    if (local) {
      local.controller.abort(new Error('cancelled'));
      await local.done;
    } else if (run.lease_expires_at && run.lease_expires_at < now()) {
      // Nobody holds it any more: end it here.
      const ended = await this.r.db.kysely.transaction().execute(async (trx) => {
        const r = await store.finishRun(trx, runId, {
          status: 'cancelled',
          error: JSON.stringify({ code: 'cancelled', message: 'the run was cancelled' }),
          completed_at: now(),
          lease_owner: null,
          lease_expires_at: null,
        });
        if (run.conversation_id) await conversations.releaseConversation(trx, run.conversation_id, runId);
        return Number(r.numUpdatedRows) === 1;
      });
      if (ended) await this.r.finished.notify({ runId, tenantId: run.tenant_id, taskId: run.task_id, status: 'cancelled' });
    } else {
      // Another process runs it: the signal reaches it at once; the flag, at its next lease renewal.
      await store.requestCancel(this.r.db.kysely, runId);
      await this.r.bus.publish('run.cancel', { runId });
      await this.waitForEnd(runId, this.r.leaseMs);
    }
  }

  /**
   * Resolves when the run is completed, failed or cancelled (here or in another process), through any
   * number of pauses for approval, or at the timeout. waitForEnd alone answers at the end of the
   * execution it finds: a run decided and resumed here between its pause and this call would be
   * answered at its next pause.
   */
  async waitForTerminal(runId: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.waitForEnd(runId, deadline - Date.now());
      if (!(await store.isRunActive(this.r.db.kysely, runId)) || Date.now() >= deadline) return;
      // Paused again, or resumed and not yet ended: a short wait keeps a run between the two from spinning this loop.
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, deadline - Date.now())).unref());
    }
  }

  /** Resolves when the run has ended (here or in another process), or after the timeout. */
  async waitForEnd(runId: string, timeoutMs: number): Promise<void> {
    const local = this.r.active.get(runId);
    if (local) {
      await Promise.race([local.done, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
      return;
    }
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!(await store.isRunActive(this.r.db.kysely, runId))) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
