import type { AgentsService } from '../agents/service.js';
import { Conflict, InvalidInput, NotFound, RunFailed } from '../errors.js';
import type { Principal } from '../http/principal.js';
import { checkResponseFormat, type ResponseFormat } from '../runtime/response-format.js';
import type { RunHandle, RunOrder, RunOutcome, RunsService } from '../runs/service.js';
import {
  type ChatCompletion,
  type ChatCompletionBody,
  type ChatMessage,
  type FinishReason,
  MAX_MESSAGE_CHARS,
  type Model,
  type ModelList,
  type Usage,
} from './schemas.js';
import type { TraceContext } from '../tracing/tracing.js';

/**
 * Agents as OpenAI models (docs/clients.md, "OpenAI-compatible endpoint"): GET /v1/models lists the
 * tenant's executable agents, and a chat completion is a run of the agent (kind `chat_completion`)
 * through the runs service, as execute's, with the client's messages mapped onto it.
 */

const MODEL_PREFIX = 'agent:';
const PAGE = 100;

const completionId = (runId: string) => `chatcmpl-${runId}`;

/** A chat completion's request, mapped onto a run. */
interface CompletionRequest {
  principal: Principal;
  body: ChatCompletionBody;
  /** X-Agentry-Conversation-Id: continue that server-side conversation. */
  conversationHeader?: string;
  /** Idempotency-Key: a retry with the same key and request answers the run the first one started. */
  idempotencyKey?: string;
  /** Traced, the request's span: the parent of the run. */
  trace?: TraceContext;
}

/** A started chat completion: the run, and what the answer is built from. */
export interface StartedCompletion {
  handle: RunHandle;
  /** The model as the client named it, echoed in every answer. */
  model: string;
  created: number;
  /** A response_format was asked for: the answer's content is the validated JSON, not the model's text. */
  structured: boolean;
  /** The run an earlier request with the same Idempotency-Key started: answered again, not started. */
  replayed?: boolean;
}

/** Where a streamed completion goes: `send` each chunk, with the usage at the end when `includeUsage` (stream_options.include_usage). */
interface CompletionStream {
  includeUsage: boolean;
  send: (chunk: object) => void;
  /** Resolves when the client went away: a stream waiting for a person stops waiting. */
  closed?: Promise<void>;
}

const refuse = (param: string, message: string) => new InvalidInput(message, [{ path: `body.${param}`, message }], 'unsupported_parameter');

/** The text of a message's content; only text parts are understood. */
function textOf(message: ChatMessage, index: number): string {
  const content = message.content;
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part) => {
      if (part.type !== 'text' || typeof part.text !== 'string') {
        throw refuse(`messages.${index}.content`, `messages[${index}] holds a ${part.type} part; only text content is supported`);
      }
      return part.text;
    })
    .join('');
}

/** The client's messages as the run's input: the last user message, the turns before it, and instructions. */
function mapMessages(messages: ChatMessage[]) {
  const history: { role: 'user' | 'assistant'; content: string }[] = [];
  const instructions: string[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'tool' || m.role === 'function' || m.tool_calls?.length || m.function_call) {
      throw refuse(
        `messages.${i}`,
        `messages[${i}] is a client tool call or result; this agent's tools run on the server and the client sends none`,
      );
    }
    const text = textOf(m, i);
    if (text.length > MAX_MESSAGE_CHARS) {
      const message = `messages[${i}] holds ${text.length} characters; a message holds at most ${MAX_MESSAGE_CHARS}`;
      throw new InvalidInput(message, [{ path: `body.messages.${i}.content`, message }]);
    }
    if (m.role === 'system' || m.role === 'developer') instructions.push(text);
    else history.push({ role: m.role as 'user' | 'assistant', content: text });
  });
  const last = history.pop();
  if (last?.role !== 'user' || messages[messages.length - 1].role !== 'user') {
    throw refuse(`messages.${messages.length - 1}`, 'the last message must be the user’s: it is the input the agent answers');
  }
  if (!last.content.trim()) throw refuse(`messages.${messages.length - 1}.content`, 'the last user message is empty');
  return { input: last.content, history, instructions: instructions.filter(Boolean).join('\n\n') || undefined };
}

/** Refuses what would change the answer's meaning and cannot be honoured; answers whether tools are off. */
function checkOptions(body: ChatCompletionBody): { enableTools: boolean; responseFormat?: ResponseFormat } {
  if (body.n !== undefined && body.n !== null && body.n !== 1) throw refuse('n', 'n must be 1: an agent run gives one answer');
  if (body.tools?.length) throw refuse('tools', 'client tools are not supported: the agent calls its own tools on the server');
  if (body.functions?.length) throw refuse('functions', 'client functions are not supported: the agent calls its own tools on the server');
  const choice = body.tool_choice ?? body.function_call;
  if (choice !== undefined && choice !== null && choice !== 'auto' && choice !== 'none') {
    throw refuse(
      body.tool_choice !== undefined ? 'tool_choice' : 'function_call',
      'only "auto" (the agent’s tools) or "none" (no tools) is supported',
    );
  }
  if (body.stop?.length) throw refuse('stop', 'stop sequences are not supported');
  if (body.logprobs) throw refuse('logprobs', 'logprobs are not supported');
  if (body.top_logprobs !== undefined && body.top_logprobs !== null) throw refuse('top_logprobs', 'logprobs are not supported');
  if (body.logit_bias && Object.keys(body.logit_bias).length) throw refuse('logit_bias', 'logit_bias is not supported');
  return { enableTools: choice !== 'none', responseFormat: responseFormatOf(body.response_format) };
}

/** OpenAI's response_format as the run's responseFormat: json_schema as given, json_object as any object. */
function responseFormatOf(format: ChatCompletionBody['response_format']): ResponseFormat | undefined {
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_schema', schema: { type: 'object' } };
  if (format.type !== 'json_schema') {
    throw refuse('response_format.type', `response_format ${format.type} is not supported: "text", "json_object" or "json_schema"`);
  }
  const spec = format.json_schema as { name?: unknown; schema?: unknown } | undefined;
  if (!spec || typeof spec !== 'object') throw refuse('response_format.json_schema', 'must be an object with name and schema');
  if (spec.name !== undefined && (typeof spec.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(spec.name))) {
    throw refuse('response_format.json_schema.name', 'must be 1-64 letters, digits, underscores or dashes');
  }
  if (!spec.schema || typeof spec.schema !== 'object' || Array.isArray(spec.schema)) {
    throw refuse('response_format.json_schema.schema', 'must be a JSON Schema object with type "object" at its root');
  }
  const responseFormat: ResponseFormat = {
    type: 'json_schema',
    schema: spec.schema as Record<string, unknown>,
    ...(spec.name ? { name: spec.name as string } : {}),
  };
  checkResponseFormat(responseFormat, 'body.response_format.json_schema');
  return responseFormat;
}

/** Which server-side conversation the request continues, if any. */
function conversationOf(body: ChatCompletionBody, header: string | undefined): string | undefined {
  const fromMetadata = body.metadata?.conversation_id;
  if (header && fromMetadata && header !== fromMetadata) {
    throw refuse(
      'metadata.conversation_id',
      'metadata.conversation_id and the X-Agentry-Conversation-Id header name different conversations',
    );
  }
  return header || fromMetadata || undefined;
}

/** How the run ended, in OpenAI's words: an answer cut short by max tokens or the agent's maxSteps is `length`. */
function finishReason(run: Awaited<ReturnType<RunsService['get']>>): FinishReason {
  const last = run.steps[run.steps.length - 1];
  return last && (last.finishReason === 'length' || last.finishReason === 'tool-calls') ? 'length' : 'stop';
}

/** An agent listed as a model: hosted here, and the principal's own when it is an agent's token. */
const isModel = (principal: Principal, agent: { id: string; hosting: string }) =>
  agent.hosting === 'platform' && (principal.agentId === undefined || agent.id === principal.agentId);

const modelOf = (a: { id: string; createdAt: string; appId: string; name: string; description: string | null }): Model => ({
  id: `${MODEL_PREFIX}${a.id}`,
  object: 'model',
  created: Math.floor(Date.parse(a.createdAt) / 1000),
  owned_by: a.appId,
  name: a.name,
  app_id: a.appId,
  description: a.description,
});

const usageOf = (outcome: RunOutcome): Usage => ({
  prompt_tokens: outcome.tokenUsage.inputTokens,
  completion_tokens: outcome.tokenUsage.outputTokens,
  total_tokens: outcome.tokenUsage.inputTokens + outcome.tokenUsage.outputTokens,
});

export interface OpenAiCompatOptions {
  runs: RunsService;
  agents: AgentsService;
  /** How long an answer waits for a person to decide a tool call its run waits on (OPENAI_APPROVAL_WAIT_SECONDS). */
  approvalWaitMs: number;
}

export class OpenAiCompatService {
  private readonly runs: RunsService;
  private readonly agents: AgentsService;
  private readonly approvalWaitMs: number;

  constructor({ runs, agents, approvalWaitMs }: OpenAiCompatOptions) {
    this.runs = runs;
    this.agents = agents;
    this.approvalWaitMs = approvalWaitMs;
  }

  /** The tenant's executable agents (status available, hosted here); an agent's own token sees only itself. */
  async models(principal: Principal): Promise<ModelList> {
    const agents = [];
    for (let page = 1; ; page++) {
      const p = await this.agents.list(principal.tenantId, { status: 'available' }, page, PAGE);
      agents.push(...p.agents);
      if (page * PAGE >= p.total || !p.agents.length) break;
    }
    return { object: 'list', data: agents.filter((a) => isModel(principal, a)).map(modelOf) };
  }

  /** One model of GET /v1/models (openai's models.retrieve): the same agents, else 404 naming the model. */
  async model(principal: Principal, id: string): Promise<Model> {
    const agentId = id.startsWith(MODEL_PREFIX) ? id.slice(MODEL_PREFIX.length) : '';
    const agent = agentId ? await this.agents.find(principal.tenantId, agentId) : undefined;
    if (agent?.status !== 'available' || !isModel(principal, agent)) throw new NotFound(`model ${id}`);
    return modelOf(agent);
  }

  /**
   * Starts the agent's run for a chat completion, or with an Idempotency-Key already used for this
   * request, answers the run that request started (as execute does); a request that started nothing
   * leaves the key free for its retry.
   */
  async start(req: CompletionRequest): Promise<StartedCompletion> {
    const { principal, body, idempotencyKey } = req;
    const tenantId = principal.tenantId;
    const started = await this.runs.start({
      principal,
      trace: req.trace,
      idempotency:
        idempotencyKey === undefined
          ? undefined
          : { key: idempotencyKey, request: { method: 'POST', route: '/v1/chat/completions', body, conversation: req.conversationHeader } },
      run: () => this.runOrder(req),
    });
    // The answer's content is the validated JSON when the request asks for a response format.
    const structured = responseFormatOf(body.response_format) !== undefined;
    if ('replayed' in started) {
      const run = await this.runs.get(tenantId, started.replayed.runId);
      const handle = {
        runId: run.id,
        conversationId: run.conversationId ?? '',
        userMessageId: '',
        startedAt: run.createdAt,
        done: Promise.resolve(null),
      };
      return {
        handle,
        model: body.model,
        created: Math.floor(Date.parse(run.createdAt) / 1000),
        structured,
        replayed: true,
      };
    }
    // Its run is its own (onActiveRun reject): never a message given to another run.
    if (!('run' in started)) throw new Conflict('conversation_busy', 'the agent is still answering in this conversation');
    const handle = started.run;
    return { handle, model: body.model, created: Math.floor(Date.parse(handle.startedAt) / 1000), structured };
  }

  /** The run a chat completion asks for; every refusal happens here, before anything is written. */
  private async runOrder(req: CompletionRequest): Promise<RunOrder> {
    const { principal, body } = req;
    const { enableTools, responseFormat } = checkOptions(body);
    const { input, history, instructions } = mapMessages(body.messages);
    const conversationId = conversationOf(body, req.conversationHeader);
    const agentId = body.model.startsWith(MODEL_PREFIX) ? body.model.slice(MODEL_PREFIX.length) : '';
    const agent =
      agentId && (principal.agentId === undefined || principal.agentId === agentId)
        ? await this.agents.find(principal.tenantId, agentId)
        : undefined;
    if (!agent) throw new NotFound(`model ${body.model}`);
    return {
      kind: 'chat_completion',
      agent,
      // A named conversation's stored history is what the model sees; the client's copy is not added to it.
      input: { content: input, history: conversationId ? undefined : history, instructions },
      // OpenAI's end-user id is the run's user (memory/): a named conversation must already be theirs.
      where: { conversationId, userId: body.user },
      options: {
        enableTools,
        responseFormat,
        maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
        // A busy conversation is refused (409): an OpenAI answer cannot be "injected into another run".
        onActiveRun: 'reject',
      },
    };
  }

  /**
   * How the run ended, for an answer: throws RunFailed (the run failed) or Conflict (cancelled), as
   * execute does; otherwise the outcome with OpenAI's finish reason and usage.
   */
  async ended(principal: Principal, started: StartedCompletion) {
    // A replayed run may still be running, here or on another replica: its end is waited for.
    let outcome = started.replayed
      ? await this.runs.outcomeOf(principal.tenantId, started.handle.runId)
      : await this.runs.outcome(principal.tenantId, started.handle);
    if (outcome.status === ('awaiting_approval' as string)) {
      // A tool call waits for a person: the answer waits for the decision and the run's end, as a delegated call does.
      await this.runs.waitForTerminal(outcome.runId, this.approvalWaitMs);
      outcome = await this.runs.outcomeOf(principal.tenantId, outcome.runId);
      if (outcome.status === ('awaiting_approval' as string)) throw this.stillWaiting(outcome.runId);
    }
    if (outcome.status === 'failed') {
      throw new RunFailed(
        outcome.error?.code ?? 'run_failed',
        `the run failed: ${outcome.error?.message ?? 'unknown error'} (run ${outcome.runId})`,
      );
    }
    if (outcome.status === 'cancelled') throw new Conflict('run_cancelled', `the run was cancelled (run ${outcome.runId})`);
    const run = await this.runs.get(principal.tenantId, outcome.runId);
    // The validated object (after a repair, if one was needed), never the model's raw text.
    const content = started.structured && outcome.structuredOutput ? JSON.stringify(outcome.structuredOutput) : outcome.output;
    return { outcome, content, finishReason: finishReason(run), usage: usageOf(outcome) };
  }

  /** The run still waits for a person after the limit: it goes on waiting, the client is told where to look. */
  private stillWaiting(runId: string) {
    return new Conflict(
      'run_awaiting_approval',
      `the run ${runId} still waits for a person to approve a tool call after ${this.approvalWaitMs / 1000} s ` +
        '(GET /api/v1/approvals); once decided, its answer is at GET /api/v1/runs/' +
        runId,
    );
  }

  /** The whole answer of a non-streamed chat completion. */
  async complete(principal: Principal, started: StartedCompletion): Promise<ChatCompletion> {
    const { outcome, content, finishReason, usage } = await this.ended(principal, started);
    return {
      id: completionId(outcome.runId),
      object: 'chat.completion',
      created: started.created,
      model: started.model,
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, finish_reason: finishReason, logprobs: null }],
      usage,
    };
  }

  /**
   * A streamed chat completion: `send` is given each chat.completion.chunk, from the role to the
   * finish reason (and the usage when asked); the agent's tool calls are not shown. Throws as
   * `ended` does when the run did not complete, after the content it streamed.
   */
  async stream(principal: Principal, started: StartedCompletion, { includeUsage, send, closed }: CompletionStream): Promise<void> {
    const base = {
      id: completionId(started.handle.runId),
      object: 'chat.completion.chunk',
      created: started.created,
      model: started.model,
    };
    // With include_usage every chunk says `usage: null` until the last one, as OpenAI's do.
    const pending = includeUsage ? { usage: null } : {};
    const delta = (d: object, finish: FinishReason | null = null) => ({
      ...base,
      choices: [{ index: 0, delta: d, finish_reason: finish, logprobs: null }],
      ...pending,
    });
    send(delta({ role: 'assistant', content: '' }));
    let streamEnded!: (how: 'ended' | 'waited too long') => void;
    const end = new Promise<'ended' | 'waited too long'>((resolve) => (streamEnded = resolve));
    // While the run waits for a person the stream stays open (the SSE heartbeat's comments keep it), up to the limit.
    let waiting: NodeJS.Timeout | undefined;
    const unsubscribe = await this.runs.follow(principal.tenantId, started.handle.runId, 0, (e) => {
      if (e?.event === 'approval_required') {
        waiting ??= setTimeout(() => streamEnded('waited too long'), this.approvalWaitMs);
        return;
      }
      clearTimeout(waiting);
      waiting = undefined;
      if (e === null) streamEnded('ended');
      // A structured answer is sent whole at the end: the streamed text may hold an attempt that was repaired.
      else if (e.event === 'token' && !started.structured) send(delta({ content: String(e.data.text) }));
    });
    const how = await (closed ? Promise.race([end, closed.then(() => 'closed' as const)]) : end);
    clearTimeout(waiting);
    unsubscribe();
    if (how === 'waited too long') throw this.stillWaiting(started.handle.runId);
    if (how === 'closed') return;
    const { content, finishReason, usage } = await this.ended(principal, started);
    if (started.structured) send(delta({ content }));
    send(delta({}, finishReason));
    if (includeUsage) send({ ...base, choices: [], usage });
  }
}
