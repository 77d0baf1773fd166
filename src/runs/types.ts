import type { Kysely } from 'kysely';
import type { Agent } from '../agents/schemas.js';
import type { ConversationRow, MessageRow } from '../conversations/turns.js';
import type { Database } from '../db/schema.js';
import type { LoopResult } from '../runtime/loop.js';
import type { ResponseFormat } from '../runtime/structured-output.js';
import type { TraceContext } from '../tracing/tracing.js';
import type { TerminalStatus } from './statuses.js';
import type { RunError } from './views.js';

/** The public shapes of the runs domain: what other domains hand to it and get back. */

/** The ways a run is started: each route or domain starting runs names its own (the runs list filters on it). */
export const RUN_KINDS = ['execute', 'chat', 'stream', 'message', 'task', 'delegation', 'chat_completion', 'a2a'] as const;
type RunKind = (typeof RUN_KINDS)[number];
export type OnActiveRun = 'reject' | 'enqueue' | 'inject';

/** Who starts or cancels a run: declared here (not tenancy's Principal) so runs need not import tenancy. */
export interface RunPrincipal {
  tenantId: string;
  actor: { id: string | null };
  /** Set for an agent's own token: it reaches only that agent's runs. */
  agentId?: string;
}

export interface StartRunInput {
  principal: Pick<RunPrincipal, 'tenantId' | 'actor'>;
  agent: Agent;
  kind: RunKind;
  /** The user's message as stored in the conversation. */
  content: string;
  /** Extra text the model sees with the message (attachments, task input); not stored as content. */
  modelContext?: string;
  /**
   * Earlier turns the caller holds (an OpenAI-style client sends the whole conversation): the model
   * sees them before the conversation's own history; they are not stored.
   */
  history?: { role: 'user' | 'assistant'; content: string }[];
  /** The caller's instructions, added to the system prompt after the agent's own sections; not stored. */
  instructions?: string;
  attachments?: string[];
  conversationId?: string;
  /**
   * The end user the run answers (memory/): a new conversation is theirs; an existing one must be
   * theirs already (or nobody's named, when this is absent).
   */
  userId?: string;
  /**
   * The caller cannot name the user it acts for (A2A): without a user, the run still may not change the
   * agent-wide memory blocks every user's runs are told (memory/). Carried into delegated runs.
   */
  agentMemoryReadOnly?: boolean;
  /** The conversation's row, when the caller has just read it (not read again). */
  conversation?: ConversationRow;
  enableTools?: boolean;
  maxTokens?: number;
  /** The shape the final answer must have: validated, returned as `structuredOutput` (runtime/response-format.ts checks it first). */
  responseFormat?: ResponseFormat;
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
   * the finished listeners as usual.
   */
  onFinish?: (trx: Kysely<Database>, run: RunFinished) => Promise<void>;
  /** Traced, the span that starts the run (a request, a task's job, a tool call delegating to it): its parent; the active span otherwise. */
  trace?: TraceContext;
}

/**
 * A run as a caller asks for it (runs/starter.ts): which agent, what it is asked, where the run
 * belongs and how it runs. Each way of starting a run (the execute routes, a conversation's message, a
 * chat completion, an A2A message, a task's job, a delegation tool) translates its request into this.
 */
export interface RunOrder {
  kind: RunKind;
  /** The agent as the caller found it, or its id: the principal's tenant's agent (NotFound otherwise). */
  agent: Agent | string;
  /** What the agent is asked; `attachments` are file ids, whose text the model is given with the message. */
  input: Pick<StartRunInput, 'content' | 'attachments' | 'modelContext' | 'history' | 'instructions'>;
  /** Where the run belongs: a conversation (none named: a new one), a task's job, a delegating run. */
  where?: Pick<
    StartRunInput,
    'conversationId' | 'conversation' | 'userId' | 'agentMemoryReadOnly' | 'taskId' | 'onStart' | 'onFinish' | 'delegationDepth' | 'trace'
  >;
  options?: Pick<StartRunInput, 'enableTools' | 'maxTokens' | 'responseFormat' | 'onActiveRun'>;
}

/** A request to start a run: who asks, the run asked for, and the Idempotency-Key the request came with. */
export interface RunRequest {
  principal: StartRunInput['principal'];
  /**
   * The key and what identifies the request it came with (method, route, ids, body): a retry with both
   * is answered what the first request started (`replayed`) and starts nothing.
   */
  idempotency?: { key: string; request: unknown };
  /** Traced, the span of the request asking (the run's parent); the active span otherwise. */
  trace?: TraceContext;
  /**
   * The run asked for. A function is called only once the key is claimed, so its checks and lookups
   * happen after the claim, and a retry answered from the key makes none.
   */
  run: RunOrder | (() => RunOrder | Promise<RunOrder>);
}

/**
 * How a request to start a run was answered: the run it started, the running run its message went to
 * instead (onActiveRun `inject`), or what the first request with its Idempotency-Key started.
 */
export type StartedRun = { run: RunHandle } | { injected: InjectedInstead } | { replayed: ReplayedStart };

/** What the first request with an Idempotency-Key started: a run (200), or a message given to a running one (202). */
export interface ReplayedStart {
  status: number;
  runId: string;
  /** The message a 202 gave to the running run. */
  messageId?: string;
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
  status: TerminalStatus;
  output: string;
  /** The final answer as an object, when the run was given a response format. */
  structuredOutput: Record<string, unknown> | null;
  /** Why the model stopped (stop, length, content-filter, max_steps...); null when no step answered. */
  finishReason: string | null;
  error: RunError | null;
  cost: number;
  tokenUsage: { inputTokens: number; outputTokens: number };
  toolCalls: LoopResult['toolCalls'];
  duration: number;
  /** The assistant's message the run added to the conversation, if any. */
  reply: MessageRow | null;
}

/** A run reached its terminal state (told to the runs service's finished listeners, once per run). */
export interface RunFinished {
  runId: string;
  tenantId: string;
  taskId: string | null;
  status: TerminalStatus;
  /** The end as written, when the writer knows it whole (listeners need not read the run back). */
  ended?: { output: string; error: RunError | null };
  /** The run's own `onFinish` was written in the same transaction as this end. */
  finishedInTransaction?: boolean;
  /**
   * False when the run never waited for approval (no tool approval of it can exist, so none is left
   * to close); absent when the writer does not know (an end written elsewhere than its execution).
   */
  awaitedApproval?: boolean;
}

export type RunFinishedListener = (run: RunFinished) => Promise<void> | void;

/** What `start` answers when the message went to an already running run instead. */
export interface InjectedInstead {
  injected: true;
  runId: string;
  messageId: string;
  conversationId: string;
}

export function isInjected(x: RunHandle | InjectedInstead): x is InjectedInstead {
  return (x as InjectedInstead).injected === true;
}

/** Abort reason when something outside the run's loop fails it (its events could not be recorded): the run fails with `code`. */
export class RunFault extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

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
export type SystemPromptContributor = (ctx: {
  tenantId: string;
  agent: Agent;
  toolsEnabled: boolean;
  /** The end user of the run's conversation, if it names one. */
  userId?: string | null;
  /** The run may not change the agent-wide memory blocks even without a user (StartRunInput). */
  agentMemoryReadOnly?: boolean;
}) => Promise<string | undefined>;
