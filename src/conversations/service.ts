import type { Agent } from '../agents/schemas.js';
import type { AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import { Conflict, InvalidInput, NotFound, RunFailed } from '../errors.js';
import { newId, now } from '../ids.js';
import { recordAudit } from '../tenancy/audit.js';
import type { Principal } from '../tenancy/permissions.js';
import { attachmentsColumn, metadataColumn, tokenUsageColumn, toolCallsColumn } from './columns.js';
import * as store from './store.js';
import { checkResponseFormat, type ResponseFormat } from '../runtime/response-format.js';
import type { TraceContext } from '../tracing/tracing.js';

export const CONVERSATION_STATUSES = ['active', 'completed', 'archived'] as const;

function summary(row: store.ConversationRow) {
  return {
    id: row.id,
    name: row.name,
    agentId: row.agent_id,
    appId: row.app_id,
    userId: row.user_id,
    status: row.status,
    messageCount: row.message_count,
    lastMessageAt: row.last_message_at,
    createdAt: row.created_at,
  };
}

function details(row: store.ConversationRow) {
  return { ...summary(row), metadata: metadataColumn(row.metadata), updatedAt: row.updated_at, activeRunId: row.active_run_id };
}

function messageView(row: store.MessageRow) {
  return {
    id: row.id,
    role: row.role,
    content: row.content,
    toolCalls: toolCallsColumn(row.tool_calls),
    tokenUsage: tokenUsageColumn(row.token_usage),
    attachments: attachmentsColumn(row.attachments),
    runId: row.run_id,
    createdAt: row.created_at,
  };
}

/** What the conversation does when a message arrives while a run answers it (the agent's configuration by default). */
type OnActiveRun = Agent['configuration']['onActiveRun'];

/** A message posted to a conversation, for the run that answers it. */
interface MessageRun {
  agent: Agent;
  content: string;
  /** File ids: stored with the message, their text given to the model with it. */
  attachments?: string[];
  conversation: store.ConversationRow;
  onActiveRun?: OnActiveRun;
  responseFormat?: ResponseFormat;
}

/** The answer to a posted message, from how its run ended. */
function replyOf(run: MessageRunEnd) {
  if (run.status === 'failed') {
    throw new RunFailed(
      run.error?.code ?? 'run_failed',
      `the agent could not answer: ${run.error?.message ?? 'unknown error'} (run ${run.runId})`,
    );
  }
  if (!run.reply) throw new Conflict('run_cancelled', `the run ended ${run.status} without a reply (run ${run.runId})`);
  return {
    message: messageView(run.reply),
    cost: run.cost,
    runId: run.runId,
    ...(run.structuredOutput ? { structuredOutput: run.structuredOutput } : {}),
  };
}

/** How a run answering a message ended. */
interface MessageRunEnd {
  runId: string;
  status: string;
  error: { code: string; message: string } | null;
  cost: number;
  reply: store.MessageRow | null;
  /** The answer as an object, when the message asked for a responseFormat. */
  structuredOutput?: Record<string, unknown> | null;
}

/**
 * How a posted message was answered: by a run that has ended, handed to the run already answering, or
 * (a retry with its Idempotency-Key) what the first request with the key started.
 */
type MessageAnswer =
  | { injected: { injected: true; runId: string; messageId: string; conversationId: string } }
  | { ended: MessageRunEnd }
  | { replayed: { status: number; runId: string; messageId?: string } };

/**
 * Posting a message starts a run. The run engine writes its turns through this domain (turns.ts),
 * so this domain does not import it: it declares what it needs, and app.ts hands it the runs
 * domain's implementation (runs/messages.ts).
 */
export interface MessageRuns {
  /**
   * Starts the run answering a message and waits for its end, or hands the message to the
   * conversation's running run. With an Idempotency-Key (and what identifies the request), `message`
   * is called once the key is claimed, and a retry is answered what the first request started.
   */
  answer(a: {
    principal: Principal;
    idempotency?: { key: string; request: unknown };
    message: () => Promise<MessageRun>;
    /** Traced, the posting request's span: the parent of the run. */
    trace?: TraceContext;
  }): Promise<MessageAnswer>;
  /** How an earlier run ended, waiting for its end (an idempotent retry's answer). */
  endOf(tenantId: string, runId: string): Promise<MessageRunEnd>;
  /** Adds the message to the conversation's running run. */
  inject(tenantId: string, conversationId: string, content: string): Promise<{ runId: string; messageId: string }>;
}

/** A message posted to a conversation, as the route took it. */
interface PostedMessage {
  content: string;
  attachments?: string[];
  onActiveRun?: OnActiveRun;
  /** The shape the answer must have (runtime/response-format.ts). */
  responseFormat?: ResponseFormat;
}

export interface ConversationsOptions {
  db: Db;
  agents: AgentsService;
  /** Lazy port to the runs domain (built after conversations, whose files and turns it uses): resolved when a message is posted. */
  runs: () => MessageRuns;
}

export class ConversationsService {
  private readonly db: Db;
  private readonly agents: AgentsService;
  private readonly runs: () => MessageRuns;

  constructor({ db, agents, runs }: ConversationsOptions) {
    this.db = db;
    this.agents = agents;
    this.runs = runs;
  }

  async list(tenantId: string, filter: store.ConversationFilter, page: number, limit: number) {
    const { rows, total } = await store.listConversations(this.db.kysely, { tenantId, filter, limit, offset: (page - 1) * limit });
    return { conversations: rows.map(summary), total, page, limit };
  }

  /** The conversation; with `agentId` (an agent's own token), only a conversation of that agent. */
  private async row(tenantId: string, id: string, agentId?: string) {
    const row = await store.findConversation(this.db.kysely, tenantId, id);
    if (!row || (agentId !== undefined && row.agent_id !== agentId)) throw new NotFound('conversation');
    return row;
  }

  async create(
    principal: Principal,
    input: { agentId: string; name?: string; appId?: string; userId?: string; metadata?: Record<string, unknown> },
  ) {
    const agent = await this.agents.get(principal.tenantId, input.agentId);
    const at = now();
    const row: store.ConversationRow = {
      id: newId(),
      tenant_id: principal.tenantId,
      agent_id: agent.id,
      app_id: input.appId ?? agent.appId,
      name: input.name ?? null,
      status: 'active',
      metadata: JSON.stringify(input.metadata ?? {}),
      message_count: 0,
      last_message_at: null,
      duration_ms: 0,
      active_run_id: null,
      created_by: principal.actor.id,
      created_at: at,
      updated_at: at,
      deleted_at: null,
      user_id: input.userId ?? null,
    };
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.insertConversation(trx, row);
      await recordAudit(trx, {
        tenantId: principal.tenantId,
        actor: principal.actor,
        action: 'conversation.created',
        resourceType: 'conversation',
        resourceId: row.id,
        detail: { agentId: agent.id, ...(row.user_id ? { userId: row.user_id } : {}) },
      });
    });
    return details(row);
  }

  async get(tenantId: string, id: string, agentId?: string) {
    const row = await this.row(tenantId, id, agentId);
    // A deleted agent leaves its name unknown; any other failure (the database away) is the request's.
    const agent = await this.agents.find(tenantId, row.agent_id);
    return {
      ...details(row),
      participants: [
        { type: 'agent' as const, id: row.agent_id, name: agent?.name ?? null },
        ...(row.created_by ? [{ type: 'user' as const, id: row.created_by, name: null }] : []),
      ],
    };
  }

  async update(principal: Principal, id: string, input: { name?: string | null; status?: string; metadata?: Record<string, unknown> }) {
    const row = await this.row(principal.tenantId, id);
    const patch: Partial<store.ConversationRow> = { updated_at: now() };
    if (input.name !== undefined) patch.name = input.name;
    if (input.status !== undefined) patch.status = input.status;
    if (input.metadata !== undefined) patch.metadata = JSON.stringify(input.metadata);
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.updateConversation(trx, principal.tenantId, id, patch);
      await recordAudit(trx, {
        tenantId: principal.tenantId,
        actor: principal.actor,
        action: 'conversation.updated',
        resourceType: 'conversation',
        resourceId: id,
        detail: { fields: Object.keys(input), ...(input.status ? { status: input.status } : {}) },
      });
    });
    return this.get(principal.tenantId, (await this.row(principal.tenantId, row.id)).id);
  }

  async delete(principal: Principal, id: string) {
    await this.row(principal.tenantId, id);
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.updateConversation(trx, principal.tenantId, id, { deleted_at: now() });
      await recordAudit(trx, {
        tenantId: principal.tenantId,
        actor: principal.actor,
        action: 'conversation.deleted',
        resourceType: 'conversation',
        resourceId: id,
      });
    });
  }

  /** A page of the conversation's messages; with `agentId` (an agent's own token), only of a conversation of that agent. */
  async messages(tenantId: string, id: string, { limit, before, agentId }: store.MessagePage & { agentId?: string }) {
    await this.row(tenantId, id, agentId);
    if (before && !(await store.findMessage(this.db.kysely, tenantId, id, before))) {
      throw new InvalidInput('before names no message of this conversation', [
        { path: 'querystring.before', message: 'names no message of this conversation' },
      ]);
    }
    const { rows, hasMore } = await store.messagesBefore(this.db.kysely, tenantId, id, { limit, before });
    return { messages: rows.map(messageView), hasMore };
  }

  /**
   * Posts a user message and waits for the agent's reply (or hands it to the running answer); with an
   * Idempotency-Key an earlier request with the same message already used, answers what that request
   * started (`replayed`) instead of starting another run.
   */
  async postOnce(principal: Principal, id: string, input: PostedMessage, { key, trace }: { key?: string; trace?: TraceContext } = {}) {
    const tenantId = principal.tenantId;
    const answer = await this.runs().answer({
      principal,
      trace,
      idempotency:
        key === undefined
          ? undefined
          : { key, request: { method: 'POST', route: '/api/v1/conversations/:id/messages', conversationId: id, body: input } },
      message: () => this.messageRun(principal, id, input),
    });
    if ('replayed' in answer) {
      const original = answer.replayed;
      // A replay answers only whom posting would: an agent's own token, its own conversations (404 otherwise).
      await this.row(tenantId, id, principal.agentId);
      if (original.status === 202) {
        return {
          injected: { injected: true as const, runId: original.runId, messageId: original.messageId ?? '', conversationId: id },
          replayed: true,
        };
      }
      return { reply: replyOf(await this.runs().endOf(tenantId, original.runId)), replayed: true };
    }
    if ('injected' in answer) return { injected: answer.injected, replayed: false };
    return { reply: replyOf(answer.ended), replayed: false };
  }

  /** The run a posted message asks for; every refusal happens here, before anything is written. */
  private async messageRun(principal: Principal, id: string, input: PostedMessage): Promise<MessageRun> {
    checkResponseFormat(input.responseFormat, 'body.responseFormat');
    const row = await this.row(principal.tenantId, id, principal.agentId);
    if (row.status !== 'active')
      throw new Conflict('conversation_not_active', `the conversation is ${row.status}; only active conversations take messages`);
    // Only a deleted agent makes the conversation read-only; any other failure is the request's.
    const agent = await this.agents.find(principal.tenantId, row.agent_id);
    if (!agent) throw new Conflict('agent_deleted', 'the agent of this conversation was deleted; the conversation is read-only');
    return {
      agent,
      content: input.content,
      attachments: input.attachments,
      conversation: row,
      onActiveRun: input.onActiveRun,
      responseFormat: input.responseFormat,
    };
  }

  inject(principal: Principal, id: string, content: string) {
    return this.runs().inject(principal.tenantId, id, content);
  }

  stats(tenantId: string) {
    return store.stats(this.db.kysely, tenantId).then((s) => ({
      ...s,
      averageMessagesPerConversation: s.total ? Math.round((s.totalMessages / s.total) * 100) / 100 : 0,
    }));
  }
}
