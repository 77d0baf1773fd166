import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Agent } from '../agents/schemas.js';
import type { AgentsService } from '../agents/service.js';
import { Conflict, DomainError, InvalidInput, NotFound } from '../errors.js';
import type { Principal } from '../http/principal.js';
import type { RunHandle, RunsService } from '../runs/service.js';
import {
  type A2aArtifact,
  type A2aMessage,
  type A2aTask,
  type AgentCard,
  type JsonRpcResponse,
  MAX_TEXT,
  MessageSendParams,
  TaskIdParams,
  TaskQueryParams,
  type TaskState,
} from './schemas.js';
import type { TraceContext } from '../tracing/tracing.js';

/**
 * Agents as A2A agents (docs/clients.md, "Agent2Agent (A2A)"): an A2A task is a run of the agent
 * (kind `a2a`), its context the run's conversation. The JSON-RPC binding of protocol 0.3 is answered
 * here; the routes only carry it over HTTP and SSE.
 */

const PROTOCOL_VERSION = '0.3.0';

/** A JSON-RPC error object (the A2A codes: -32001 task not found, -32002 not cancelable, ...). */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL = -32603;
const TASK_NOT_FOUND = -32001;
const TASK_NOT_CANCELABLE = -32002;
const PUSH_NOT_SUPPORTED = -32003;
const UNSUPPORTED_OPERATION = -32004;
const CONTENT_TYPE_NOT_SUPPORTED = -32005;

type RunView = Awaited<ReturnType<RunsService['get']>>;

/** A run's status as an A2A task state; the other way, docs/clients.md has the table. */
const STATE_OF_RUN: Record<string, TaskState> = {
  queued: 'submitted',
  running: 'working',
  // A tool call waits for a person: interrupted, the one A2A state for "needs someone's input".
  awaiting_approval: 'input-required',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'canceled',
};
const FINAL_STATES: readonly TaskState[] = ['completed', 'canceled', 'failed', 'rejected'];

const textMessage = (role: 'user' | 'agent', text: string, messageId: string, run: RunView): A2aMessage => ({
  kind: 'message',
  role,
  parts: [{ kind: 'text', text }],
  messageId,
  taskId: run.id,
  ...(run.conversationId ? { contextId: run.conversationId } : {}),
});

/** What an `input-required` task says: the input is a person's decision, given in the tenant's approvals inbox, not this client's. */
const approvalNeeded = (tool?: string) =>
  `A person must approve the agent's call of ${tool ? `the tool ${tool}` : 'a tool'} before it goes on (the approvals inbox, ` +
  'GET /api/v1/approvals); the task continues once it is decided.';

const artifactId = (runId: string) => `${runId}-response`;
const responseArtifact = (runId: string, text: string): A2aArtifact => ({
  artifactId: artifactId(runId),
  name: 'response',
  parts: [{ kind: 'text', text }],
});

/** A run as an A2A task: its input and reply as history, its reply as the `response` artifact. */
function taskOf(run: RunView, historyLength?: number): A2aTask {
  const state = STATE_OF_RUN[run.status] ?? 'unknown';
  const reply = run.output ? textMessage('agent', run.output, `${run.id}-reply`, run) : undefined;
  const statusMessage =
    state === 'failed' || state === 'canceled'
      ? textMessage('agent', run.error?.message ?? state, `${run.id}-status`, run)
      : state === 'completed'
        ? reply
        : state === 'input-required'
          ? textMessage('agent', approvalNeeded(), `${run.id}-status`, run)
          : undefined;
  const history = [textMessage('user', run.input, `${run.id}-input`, run), ...(reply ? [reply] : [])];
  return {
    kind: 'task',
    id: run.id,
    contextId: run.conversationId ?? '',
    status: { state, ...(statusMessage ? { message: statusMessage } : {}), timestamp: run.completedAt ?? run.startedAt ?? run.createdAt },
    ...(run.output ? { artifacts: [responseArtifact(run.id, run.output)] } : {}),
    history: historyLength === undefined ? history : historyLength === 0 ? [] : history.slice(-historyLength),
    metadata: { agentId: run.agentId, runStatus: run.status },
  };
}

const validators = new Map<TSchema, ReturnType<typeof Compile>>();
function check<T extends TSchema>(schema: T, params: unknown): Static<T> {
  let validator = validators.get(schema);
  if (!validator) {
    validator = Compile(schema);
    validators.set(schema, validator);
  }
  if (validator.Check(params)) return params as Static<T>;
  const errors = [...validator.Errors(params)]
    .slice(0, 10)
    .map((e) => ({ path: `params${e.instancePath.replaceAll('/', '.')}`, message: e.message }));
  throw new RpcError(INVALID_PARAMS, `invalid params: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`, { errors });
}

/** Domain errors as JSON-RPC errors; anything else is an internal error (-32603) saying nothing of its cause. */
function rpcErrorOf(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  if (err instanceof NotFound)
    return err.resource === 'run'
      ? new RpcError(TASK_NOT_FOUND, 'task not found')
      : new RpcError(INVALID_PARAMS, err.detail, { code: err.code });
  if (err instanceof InvalidInput) return new RpcError(INVALID_PARAMS, err.detail, { code: err.code, errors: err.errors });
  if (err instanceof DomainError) return new RpcError(INTERNAL, err.detail, { code: err.code });
  return new RpcError(INTERNAL, 'internal error');
}

/** An error neither ours nor a domain's: the caller logs it (the client is told only "internal error"). */
const unexpected = (err: unknown) => !(err instanceof RpcError || err instanceof DomainError);

/** A JSON-RPC error object for an error, and whether it was unexpected (to be logged). */
export function rpcErrorObject(err: unknown): { error: { code: number; message: string; data?: unknown }; unexpected: boolean } {
  const e = rpcErrorOf(err);
  return { error: { code: e.code, message: e.message, ...(e.data !== undefined ? { data: e.data } : {}) }, unexpected: unexpected(err) };
}

/** One JSON-RPC event of a stream: a task, a status update or an artifact update. */
type StreamEvent = Record<string, unknown>;

/** What a call answers: a JSON-RPC response, or the events of an SSE stream (sent through `send`). */
export type RpcAnswer =
  /** `failure`: the unexpected error the response's internal error stands for, for the log. */
  | { kind: 'response'; body: JsonRpcResponse; failure?: unknown }
  | { kind: 'stream'; id: string | number | null; events: (send: (result: StreamEvent) => void, closed: Promise<void>) => Promise<void> };

/** Where a stream's events go: `send` each one; `closed` resolves when the client went away. */
interface EventSink {
  send: (result: StreamEvent) => void;
  closed: Promise<void>;
}

interface Envelope {
  id: string | number | null;
  method: string;
  params: unknown;
}

function envelopeOf(body: unknown): Envelope {
  const b = body as Record<string, unknown> | null;
  const id = b && typeof b === 'object' && (typeof b.id === 'string' || typeof b.id === 'number') ? b.id : null;
  if (!b || typeof b !== 'object' || Array.isArray(b) || b.jsonrpc !== '2.0' || typeof b.method !== 'string') {
    throw Object.assign(new RpcError(INVALID_REQUEST, 'not a JSON-RPC 2.0 request (jsonrpc "2.0" and a method are required)'), { id });
  }
  return { id, method: b.method, params: b.params ?? {} };
}

export interface A2aOptions {
  runs: RunsService;
  agents: AgentsService;
  /** The skills an agent may use now, which its card lists (the skills domain). */
  skillBriefs: (tenantId: string, agentId: string) => Promise<readonly { id: string; name: string; description: string }[]>;
  /** The base of the card's endpoint and token URLs. */
  publicBaseUrl: string;
}

export class A2aService {
  private readonly runs: RunsService;
  private readonly agents: AgentsService;
  private readonly skillBriefs: A2aOptions['skillBriefs'];
  private readonly publicBaseUrl: string;

  constructor({ runs, agents, skillBriefs, publicBaseUrl }: A2aOptions) {
    this.runs = runs;
    this.agents = agents;
    this.skillBriefs = skillBriefs;
    this.publicBaseUrl = publicBaseUrl;
  }

  /** The agent an A2A call or card names: an executable agent of that tenant, or NotFound (nothing of another tenant is revealed). */
  async agentOf(tenantId: string, agentId: string): Promise<Agent> {
    const agent = await this.agents.find(tenantId, agentId);
    if (agent?.status !== 'available' || agent.hosting !== 'platform') throw new NotFound('agent');
    return agent;
  }

  endpointOf(tenantId: string, agentId: string): string {
    return `${this.publicBaseUrl}/a2a/${tenantId}/agents/${agentId}`;
  }

  /**
   * The Agent Card: public, served only on its tenant's path, only for an executable agent, and only
   * while the agent's `publicAgentCard` is on (off: not found, as for an agent that does not exist).
   */
  async card(tenantId: string, agentId: string): Promise<AgentCard> {
    const agent = await this.agentOf(tenantId, agentId);
    if (!agent.configuration.publicAgentCard) throw new NotFound('agent');
    const skills = await this.skillBriefs(tenantId, agentId);
    return {
      protocolVersion: PROTOCOL_VERSION,
      name: agent.name,
      description: agent.description ?? agent.role ?? agent.name,
      url: this.endpointOf(tenantId, agentId),
      preferredTransport: 'JSONRPC',
      version: agent.updatedAt,
      capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      // The agent's assigned skills; an agent without any still answers, as one general skill.
      skills: skills.length
        ? skills.map((s) => ({ id: s.id, name: s.name, description: s.description, tags: ['skill'] }))
        : [{ id: 'conversation', name: agent.name, description: agent.description ?? 'answers messages', tags: ['conversation'] }],
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an Agentry API key or access token with agents:write' },
        oauth2: {
          type: 'oauth2',
          description: 'an agent identity’s client credentials against Agentry’s token endpoint',
          flows: { clientCredentials: { tokenUrl: `${this.publicBaseUrl}/api/v1/identity/oauth/token`, scopes: {} } },
        },
      },
      security: [{ bearer: [] }, { oauth2: [] }],
    };
  }

  /** One JSON-RPC call on the agent's endpoint. Errors found before a stream begins are JSON-RPC error responses. */
  async call(principal: Principal, agent: Agent, body: unknown, trace?: TraceContext): Promise<RpcAnswer> {
    let envelope: Envelope;
    try {
      envelope = envelopeOf(body);
    } catch (err) {
      return errorResponse((err as { id: string | number | null }).id, err as RpcError);
    }
    try {
      return await this.dispatch(principal, agent, envelope, trace);
    } catch (err) {
      return { ...errorResponse(envelope.id, rpcErrorOf(err)), ...(unexpected(err) ? { failure: err } : {}) };
    }
  }

  /** `trace`: traced, the request's span, the parent of a run the call starts. */
  private async dispatch(principal: Principal, agent: Agent, { id, method, params }: Envelope, trace?: TraceContext): Promise<RpcAnswer> {
    const result = (value: A2aTask): RpcAnswer => ({ kind: 'response', body: { jsonrpc: '2.0', id, result: value } });
    switch (method) {
      case 'message/send': {
        const p = check(MessageSendParams, params);
        const handle = await this.start(principal, agent, p, trace);
        if (p.configuration?.blocking !== false) await this.runs.outcome(principal.tenantId, handle);
        return result(taskOf(await this.runs.get(principal.tenantId, handle.runId), p.configuration?.historyLength));
      }
      case 'message/stream': {
        const p = check(MessageSendParams, params);
        const handle = await this.start(principal, agent, p, trace);
        return { kind: 'stream', id, events: (send, closed) => this.follow(principal, agent, handle.runId, { send, closed }) };
      }
      case 'tasks/get': {
        const p = check(TaskQueryParams, params);
        return result(taskOf(await this.runs.get(principal.tenantId, p.id, agent.id), p.historyLength));
      }
      case 'tasks/cancel': {
        const p = check(TaskIdParams, params);
        const run = await this.runs.get(principal.tenantId, p.id, agent.id);
        try {
          return result(taskOf(await this.runs.cancel({ ...principal, agentId: agent.id }, run.id)));
        } catch (err) {
          if (err instanceof Conflict) throw new RpcError(TASK_NOT_CANCELABLE, `task cannot be canceled: ${err.detail}`);
          throw err;
        }
      }
      case 'tasks/resubscribe': {
        const p = check(TaskIdParams, params);
        const run = await this.runs.get(principal.tenantId, p.id, agent.id);
        return { kind: 'stream', id, events: (send, closed) => this.follow(principal, agent, run.id, { send, closed }) };
      }
      case 'tasks/pushNotificationConfig/set':
      case 'tasks/pushNotificationConfig/get':
      case 'tasks/pushNotificationConfig/list':
      case 'tasks/pushNotificationConfig/delete':
        throw new RpcError(PUSH_NOT_SUPPORTED, 'push notifications are not supported: use message/stream or tasks/resubscribe');
      case 'agent/getAuthenticatedExtendedCard':
        throw new RpcError(UNSUPPORTED_OPERATION, 'there is no extended card: the public card is complete');
      default:
        throw new RpcError(METHOD_NOT_FOUND, `method ${method} is not supported`);
    }
  }

  /** A user's message as a run of the agent; the contextId continues that conversation. */
  private async start(principal: Principal, agent: Agent, p: MessageSendParams, trace: TraceContext | undefined): Promise<RunHandle> {
    const { message } = p;
    if (message.role !== 'user') throw new RpcError(INVALID_PARAMS, 'params.message.role must be "user"');
    if (message.taskId) {
      throw new RpcError(
        UNSUPPORTED_OPERATION,
        'a task cannot be continued (no task waits for the client’s input): send the message with its contextId instead',
      );
    }
    const texts = message.parts.map((part) => {
      if (part.kind !== 'text') throw new RpcError(CONTENT_TYPE_NOT_SUPPORTED, `${part.kind} parts are not supported: only text`);
      return (part as { text: string }).text;
    });
    const content = texts.join('\n');
    if (content.length > MAX_TEXT) {
      throw new RpcError(
        INVALID_PARAMS,
        `params.message.parts: the text parts joined are ${content.length} characters; at most ${MAX_TEXT}`,
      );
    }
    if (!content.trim()) throw new RpcError(INVALID_PARAMS, 'the message has no text');
    const started = await this.runs.start({
      principal,
      trace,
      run: {
        kind: 'a2a',
        agent,
        input: { content },
        // A2A cannot name the user the client acts for: its runs do not change what every user is told.
        where: { conversationId: message.contextId, agentMemoryReadOnly: true },
        // A busy context is refused: an A2A task cannot be injected into another task's run.
        options: { onActiveRun: 'reject' },
      },
    });
    if (!('run' in started)) throw new Conflict('conversation_busy', 'the agent is still answering in this context');
    return started.run;
  }

  /**
   * A task's events for message/stream and tasks/resubscribe: the task as it stands, its reply's text
   * as artifact chunks (from the first token, so a resubscriber rebuilds the whole text), then the
   * final status. A client going away stops the stream, not the run.
   */
  private async follow(principal: Principal, agent: Agent, runId: string, { send, closed }: EventSink) {
    const first = await this.runs.get(principal.tenantId, runId, agent.id);
    const contextId = first.conversationId ?? '';
    const { artifacts: _, ...snapshot } = taskOf(first);
    send(snapshot);
    // While the run waits for a person the stream stays open: input-required, then working again once resumed.
    let waiting = snapshot.status.state === 'input-required';
    const status = (state: TaskState, message?: string) =>
      send({
        kind: 'status-update',
        taskId: runId,
        contextId,
        status: {
          state,
          ...(message ? { message: textMessage('agent', message, `${runId}-status`, first) } : {}),
          timestamp: new Date().toISOString(),
        },
        final: false,
      });
    let chunks = 0;
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    const unsubscribe = await this.runs.follow(principal.tenantId, runId, 0, (e) => {
      if (e === null) return ended();
      if (e.event === 'approval_required') {
        const tool = (e.data as { toolCall?: { name?: string } }).toolCall?.name;
        if (!waiting) status('input-required', approvalNeeded(tool));
        waiting = true;
        return;
      }
      if (waiting && e.event !== 'done' && e.event !== 'error') {
        waiting = false;
        status('working');
      }
      if (e.event !== 'token') return;
      const append = chunks++ > 0;
      send({
        kind: 'artifact-update',
        taskId: runId,
        contextId,
        artifact: responseArtifact(runId, String(e.data.text)),
        append,
        lastChunk: false,
      });
    });
    await Promise.race([end, closed]);
    unsubscribe();
    const run = await this.runs.get(principal.tenantId, runId, agent.id);
    const task = taskOf(run);
    if (!FINAL_STATES.includes(task.status.state)) return;
    // A reply the model gave without streaming tokens still reaches the client whole; a streamed one is
    // closed by an empty last chunk (which token was the last is known only now).
    if (run.output && chunks === 0)
      send({
        kind: 'artifact-update',
        taskId: runId,
        contextId,
        artifact: responseArtifact(runId, run.output),
        append: false,
        lastChunk: true,
      });
    else if (chunks > 0)
      send({ kind: 'artifact-update', taskId: runId, contextId, artifact: responseArtifact(runId, ''), append: true, lastChunk: true });
    send({ kind: 'status-update', taskId: runId, contextId, status: task.status, final: true });
  }
}

function errorResponse(id: string | number | null, err: RpcError): RpcAnswer {
  return {
    kind: 'response',
    body: { jsonrpc: '2.0', id, error: { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) } },
  };
}
