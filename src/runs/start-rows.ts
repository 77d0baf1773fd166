import type { Insertable } from 'kysely';
import type { ConversationRow, MessageRow } from '../conversations/turns.js';
import type { RunTable } from '../db/schema.js';
import { newId } from '../ids.js';
import type { StartRunInput } from './types.js';

/** A run being started: what its start writes is made of these. */
export interface RunStart {
  input: StartRunInput;
  runId: string;
  at: string;
  userMessageId: string;
  /** Stored as the run's options. */
  options: Record<string, unknown>;
  /** The run's worst-case cost (reservation.ts), held against its budgets until it ends. */
  reservedUsd: number;
  /** The span the run is started in (tracing on), stored so work continuing the run stays in its trace. */
  traceparent?: string;
}

/** The rows a run's start inserts; `conversation` only when the run opens a new conversation. */
export interface StartRows {
  conversation?: ConversationRow;
  message: MessageRow;
  run: Insertable<RunTable>;
}

/**
 * The rows a run's start inserts; a new conversation (when `existing` is not given) is born holding
 * the run. The run is written `running`, leased to `lease.owner`.
 */
export function startRows(run: RunStart, w: { existing?: ConversationRow; lease: { owner: string; ms: number } }): StartRows {
  const { input, runId, at } = run;
  const tenantId = input.principal.tenantId;
  const conversation: ConversationRow | undefined = w.existing
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
        user_id: input.userId ?? null,
      };
  const conversationId = w.existing?.id ?? conversation!.id;
  return {
    conversation,
    message: {
      id: run.userMessageId,
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
      options: JSON.stringify(run.options),
      output: '',
      error: null,
      cost: 0,
      reserved_usd: run.reservedUsd,
      input_tokens: 0,
      output_tokens: 0,
      duration_ms: null,
      tool_calls: '[]',
      steps: '[]',
      warnings: '[]',
      cancel_requested: 0,
      lease_owner: w.lease.owner,
      lease_expires_at: new Date(Date.now() + w.lease.ms).toISOString(),
      created_at: at,
      started_at: at,
      completed_at: null,
      ...(run.traceparent ? { traceparent: run.traceparent } : {}),
    },
  };
}
