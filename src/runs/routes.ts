import { citationsOf } from './citations.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InjectedResult, UserId } from '../conversations/schemas.js';
import { Conflict, RunFailed } from '../errors.js';
import { Id, IdParams, Json, Literals, Nullable, PageQuery, Timestamp, problems } from '../http/schemas.js';
import { lastEventId, openSse } from '../http/sse.js';
import { IdempotencyHeaders, REPLAYED_HEADER } from '../idempotency/schemas.js';
import type { ReplayedStart, RunOrder, RunOutcome, RunsService } from './service.js';
import { checkResponseFormat, ResponseFormatSchema } from '../runtime/response-format.js';
import { RUN_STATUSES } from './statuses.js';
import { RUN_KINDS } from './types.js';

/**
 * Executions and runs: POST /agents/:id/execute|chat|stream, GET /agents/:id/runs, and /runs/:runId.
 * They live here rather than in agents/ because each is a run.
 */

const TokenUsage = Type.Object({ inputTokens: Type.Integer(), outputTokens: Type.Integer() });
const RunErrorSchema = Nullable(Type.Object({ code: Type.String(), message: Type.String() }));
const StructuredOutput = Type.Record(Type.String(), Type.Unknown(), {
  description: 'the final answer as an object, valid against the request’s responseFormat schema (the text is in output)',
});
const BudgetAtStart = Type.Object({
  monthlyBudgetUsd: Type.Number(),
  spentUsd: Type.Number(),
  reservedUsd: Type.Optional(Type.Number({ description: 'what the runs active then held of the budget (their worst-case cost)' })),
});
const ToolCallBrief = Type.Object({ id: Type.String(), name: Type.String(), input: Type.Unknown(), result: Nullable(Json) });

const ExecuteBody = Type.Object(
  {
    message: Type.String({ minLength: 1, maxLength: 100_000 }),
    conversationId: Type.Optional(Id),
    userId: Type.Optional(UserId),
    enableTools: Type.Optional(Type.Boolean({ default: true })),
    maxTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 200_000 })),
    stream: Type.Optional(Type.Boolean({ default: false })),
    attachments: Type.Optional(Type.Array(Id, { maxItems: 20, description: 'file ids from POST /api/v1/files' })),
    onActiveRun: Type.Optional(Type.Union([Type.Literal('reject'), Type.Literal('enqueue'), Type.Literal('inject')])),
    responseFormat: Type.Optional(ResponseFormatSchema),
  },
  { additionalProperties: false },
);
type ExecuteBody = Static<typeof ExecuteBody>;

const RunHeaders = {
  'x-run-id': Type.String({ description: 'the run this answer belongs to' }),
  'x-conversation-id': Type.String({ description: 'the conversation of the run' }),
};

const FinishReason = Type.String({
  description:
    'why the model stopped: stop (it answered), length (cut off at maxTokens: the answer may be incomplete), content-filter, max_steps (the agent’s step limit came first), other; null when no step answered',
});

const Citations = Type.Array(Json, {
  description:
    'the passages the answer drew on, as its tools cited them (knowledge_search: knowledgeBaseId, documentId, title, sourceUrl, position, headingPath, score, snippet; docs/knowledge.md)',
});

const ExecutionResult = Type.Object(
  {
    output: Type.String(),
    structuredOutput: Type.Optional(StructuredOutput),
    conversationId: Type.String(),
    runId: Type.String(),
    status: Type.String({
      description: 'completed, or awaiting_approval: a tool call waits for a person (GET /api/v1/approvals); the run goes on once decided',
    }),
    finishReason: Nullable(FinishReason),
    cost: Type.Number({ description: 'USD' }),
    tokenUsage: TokenUsage,
    toolCalls: Type.Array(Type.Object({ name: Type.String(), input: Type.Unknown(), result: Nullable(Json) })),
    citations: Citations,
    duration: Type.Integer({ description: 'milliseconds' }),
  },
  {
    headers: {
      ...RunHeaders,
      [REPLAYED_HEADER]: Type.Literal('true', { description: 'present on an Idempotency-Key retry: the original run’s result' }),
    },
  },
);

export const RunSummarySchema = Type.Object({
  id: Type.String(),
  runId: Type.String(),
  agentId: Type.String(),
  conversationId: Nullable(Type.String()),
  taskId: Nullable(Type.String()),
  kind: Type.String(),
  status: Type.String({ description: 'queued, running, awaiting_approval, completed, failed, cancelled' }),
  model: Type.String(),
  output: Type.String(),
  structuredOutput: Nullable(StructuredOutput),
  finishReason: Nullable(FinishReason),
  contextTruncated: Type.Boolean({
    description: 'older history was left out of the prompt without a summary (it could not be made); the run’s events say when',
  }),
  error: RunErrorSchema,
  cost: Type.Number({ description: 'USD' }),
  duration: Nullable(Type.Integer({ description: 'milliseconds' })),
  tokenUsage: TokenUsage,
  toolCalls: Type.Array(ToolCallBrief),
  citations: Citations,
  warnings: Type.Array(Type.String(), {
    description:
      'tool sources that could not contribute (an MCP server down), tools left out for an unusable input schema, and what the model provider warned about (a setting the model does not support), each once',
  }),
  createdAt: Timestamp,
  startedAt: Nullable(Timestamp),
  completedAt: Nullable(Timestamp),
});

export const RunDetailsSchema = Type.Evaluate(
  Type.Intersect([
    Type.Omit(RunSummarySchema, ['toolCalls']),
    Type.Object({
      input: Type.String(),
      options: Json,
      toolCalls: Type.Array(
        Type.Object({
          id: Type.String(),
          name: Type.String(),
          input: Type.Unknown(),
          result: Nullable(Json),
          startedAt: Timestamp,
          completedAt: Nullable(Timestamp),
          source: Nullable(
            Type.String({
              description: 'the tool provider that offered it: mcp, skills, delegation, a2a (null: a run ended before this was recorded)',
            }),
          ),
          durationMs: Nullable(Type.Integer({ description: 'null while unfinished' })),
          outcome: Type.Union([Type.Literal('ok'), Type.Literal('error'), Type.Literal('unfinished')], {
            description: 'error: the result is { error: { code, message } }; unfinished: the run ended before the tool answered',
          }),
          errorCode: Nullable(
            Type.String({ description: 'the code of an error outcome (the tool’s own, tool_timeout, cancelled, invalid_tool_call...)' }),
          ),
        }),
      ),
      steps: Type.Array(
        Type.Object({
          index: Type.Integer(),
          text: Type.String(),
          toolCallIds: Type.Array(Type.String()),
          injected: Type.Array(Type.String({ description: 'messages injected before this step' })),
          finishReason: Type.String(),
          usage: TokenUsage,
          model: Type.String({ description: 'the model that answered this step (provider/name)' }),
          cost: Nullable(Type.Number({ description: 'USD, at that model’s price (null: a run ended before steps were priced)' })),
          startedAt: Nullable(Timestamp),
          completedAt: Nullable(Timestamp),
          durationMs: Nullable(Type.Integer({ description: 'from the request to the model to the end of its answer' })),
        }),
      ),
      traceId: Nullable(
        Type.String({
          description: 'the OpenTelemetry trace the run was started in, to find its spans in an external tracer; null when tracing was off',
        }),
      ),
      budget: Type.Object(
        {
          tenant: Type.Optional(BudgetAtStart),
          agent: Type.Optional(BudgetAtStart),
        },
        {
          description:
            'budgets in force when the run started, the month-to-date spend before it and what the runs active then reserved of it (USD)',
        },
      ),
    }),
  ]),
);

const SSE_DESCRIPTION =
  'Server-Sent Events: token {text}, tool_call_start {id,name,input}, tool_call_end {id,result}, approval_required {approvalId,toolCall:{id,name,arguments},reason,expiresAt} (the stream stays open while the call waits; the run goes on after the decision), context_truncated {droppedMessages,reason} (older history left out unsummarised), answer_cut {code,message,model,partial,next} (the provider’s answer broke off after `partial` was sent; next: retry or fallback: the step’s tokens start again, fail: the error follows), done {conversationId,runId,cost,tokenUsage,finishReason,structuredOutput (with a responseFormat),citations (when a tool cited passages)}, error {code,message}; each with an id for Last-Event-ID (GET /api/v1/runs/{runId}/events).';
const StreamHeaders = {
  ...RunHeaders,
  'content-location': Type.String({ description: '/api/v1/runs/{runId}/events: where to resume this stream (with Last-Event-ID)' }),
  [REPLAYED_HEADER]: Type.Literal('true', { description: 'present on an Idempotency-Key retry: the original run’s events are replayed' }),
};
// `headers` of a response schema: @fastify/swagger lists them as the response's headers in the OpenAPI document.
const sseResponse = {
  200: Type.String({ description: SSE_DESCRIPTION, contentMediaType: 'text/event-stream', headers: StreamHeaders }),
};

/** Names the run before the first event, so a client that loses the connection can resume it instead of starting another. */
function nameRun(reply: FastifyReply, runId: string, conversationId: string | null) {
  reply.raw.setHeader('x-run-id', runId);
  if (conversationId) reply.raw.setHeader('x-conversation-id', conversationId);
  reply.raw.setHeader('content-location', `/api/v1/runs/${runId}/events`);
}

/** The run a stream follows, and the events the client has (those up to `afterSeq`; 0: none). */
interface StreamedRun {
  tenantId: string;
  runId: string;
  conversationId: string | null;
  afterSeq: number;
}

/** Streams a run's events to the client until the run ends; the run goes on if the client leaves. */
async function streamRun(runs: RunsService, request: FastifyRequest, reply: FastifyReply, run: StreamedRun) {
  const { tenantId, runId, afterSeq } = run;
  nameRun(reply, runId, run.conversationId);
  // Look the run up before taking over the response, so a wrong id is still a normal 404.
  const sse = { stream: undefined as ReturnType<typeof openSse> | undefined };
  const buffered: Parameters<Parameters<RunsService['follow']>[3]>[0][] = [];
  const unsubscribe = await runs.follow(tenantId, runId, afterSeq, (e) => {
    if (!sse.stream) return void buffered.push(e);
    if (e === null) sse.stream.close();
    else sse.stream.send(e.seq, e.event, e.data);
  });
  sse.stream = openSse(request, reply);
  for (const e of buffered) {
    if (e === null) sse.stream.close();
    else sse.stream.send(e.seq, e.event, e.data);
  }
  await sse.stream.closed;
  unsubscribe();
}

export const runsRoutes: FastifyPluginAsyncTypebox<{ runs: RunsService }> = async (app, { runs }) => {
  /** The run an execution's body asks for; refused (nothing started) when its responseFormat is not a usable schema. */
  function executionOrder(agentId: string, body: ExecuteBody, kind: 'execute' | 'chat' | 'stream'): RunOrder {
    checkResponseFormat(body.responseFormat, 'body.responseFormat');
    return {
      kind,
      agent: agentId,
      input: { content: body.message, attachments: body.attachments },
      where: { conversationId: body.conversationId, userId: body.userId },
      options: {
        enableTools: body.enableTools,
        maxTokens: body.maxTokens,
        onActiveRun: body.onActiveRun,
        responseFormat: body.responseFormat,
      },
    };
  }

  async function respondJson(reply: FastifyReply, outcome: Promise<RunOutcome>) {
    const run = await outcome;
    reply.header('x-run-id', run.runId).header('x-conversation-id', run.conversationId);
    if (run.status === 'failed') {
      throw new RunFailed(run.error?.code ?? 'run_failed', `the run failed: ${run.error?.message ?? 'unknown error'} (run ${run.runId})`);
    }
    if (run.status === 'cancelled') throw new Conflict('run_cancelled', `the run was cancelled (run ${run.runId})`);
    return reply.send({
      output: run.output,
      ...(run.structuredOutput ? { structuredOutput: run.structuredOutput } : {}),
      conversationId: run.conversationId,
      runId: run.runId,
      status: run.status,
      finishReason: run.finishReason,
      cost: run.cost,
      tokenUsage: run.tokenUsage,
      toolCalls: run.toolCalls.map((c) => ({ name: c.name, input: c.input, result: c.result })),
      citations: citationsOf(run.toolCalls),
      duration: run.duration,
    });
  }

  /**
   * Starts the execution, or with an Idempotency-Key already used for this request, answers the run
   * that request started (a stream replayed after Last-Event-ID) instead of starting another.
   */
  async function execution(
    req: FastifyRequest,
    reply: FastifyReply,
    kind: 'execute' | 'chat' | 'stream',
    input: { agentId: string; body: ExecuteBody; key: string | undefined },
  ) {
    const tenantId = req.principal.tenantId;
    const streamed = kind !== 'execute';
    const { agentId, body, key } = input;
    const started = await runs.start({
      principal: req.principal,
      idempotency: key === undefined ? undefined : { key, request: { method: req.method, route: req.routeOptions.url, agentId, body } },
      trace: req.trace,
      run: () => executionOrder(agentId, body, kind),
    });
    if ('replayed' in started) return replay(req, reply, started.replayed, streamed);
    if ('injected' in started) return reply.code(202).send(started.injected);
    const { run } = started;
    if (streamed) return streamRun(runs, req, reply, { tenantId, runId: run.runId, conversationId: run.conversationId, afterSeq: 0 });
    return respondJson(reply, runs.outcome(tenantId, run));
  }

  async function replay(req: FastifyRequest, reply: FastifyReply, original: ReplayedStart, streamed: boolean) {
    const tenantId = req.principal.tenantId;
    const runId = original.runId;
    if (original.status === 202) {
      const { conversationId } = await runs.eventsState(tenantId, runId);
      return reply
        .code(202)
        .header(REPLAYED_HEADER, 'true')
        .send({ injected: true, runId, messageId: original.messageId ?? '', conversationId: conversationId ?? '' });
    }
    if (!streamed) return respondJson(reply.header(REPLAYED_HEADER, 'true'), runs.outcomeOf(tenantId, runId));
    const state = await runs.eventsState(tenantId, runId);
    reply.raw.setHeader(REPLAYED_HEADER, 'true');
    return streamRun(runs, req, reply, { tenantId, runId, conversationId: state.conversationId, afterSeq: lastEventId(req) });
  }

  const executeSchema = (summary: string, streaming: 'always' | 'optional') => ({
    tags: ['executions'],
    summary,
    params: IdParams,
    headers: IdempotencyHeaders,
    body: ExecuteBody,
    response: {
      ...(streaming === 'always' ? sseResponse : { 200: ExecutionResult }),
      202: InjectedResult,
      ...problems(400, 401, 402, 403, 404, 409, 413, 415, 422, 429, 502),
    },
  });

  app.post(
    '/api/v1/agents/:id/execute',
    {
      config: { permission: 'agents:write', agentScope: { param: 'id' } },
      schema: {
        operationId: 'executeAgent',
        ...executeSchema('Execute an agent: JSON result, or SSE when stream is true', 'optional'),
        description: `With "stream": true the answer is ${SSE_DESCRIPTION}`,
      },
    },
    async (req, reply) =>
      execution(req, reply, req.body.stream ? 'stream' : 'execute', {
        agentId: req.params.id,
        body: req.body,
        key: req.headers['idempotency-key'],
      }),
  );

  for (const [path, operationId, summary] of [
    ['/api/v1/agents/:id/chat', 'chatWithAgent', 'Chat with an agent (always streams over SSE)'],
    ['/api/v1/agents/:id/stream', 'streamAgent', 'Stream an agent’s answer over SSE (same body as execute)'],
  ] as const) {
    app.post(
      path,
      { config: { permission: 'agents:write', agentScope: { param: 'id' } }, schema: { operationId, ...executeSchema(summary, 'always') } },
      async (req, reply) =>
        execution(req, reply, path.endsWith('chat') ? 'chat' : 'stream', {
          agentId: req.params.id,
          body: req.body,
          key: req.headers['idempotency-key'],
        }),
    );
  }

  app.get(
    '/api/v1/agents/:id/runs',
    {
      config: { permission: 'agents:read', agentScope: { param: 'id' } },
      schema: {
        operationId: 'listAgentRuns',
        tags: ['executions'],
        summary: 'Execution history of an agent, newest first (kept after the agent is deleted)',
        description: '404 `not_found` when the agent is unknown, or another tenant’s, and has no runs here.',
        params: IdParams,
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: {
          200: Type.Object({ runs: Type.Array(RunSummarySchema), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403, 404),
        },
      },
    },
    async (req) => runs.listForAgent(req.principal.tenantId, req.params.id, req.query.page, req.query.limit),
  );

  app.get(
    '/api/v1/runs',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listRuns',
        tags: ['executions'],
        summary: 'The tenant’s runs across its agents, newest first, with filters',
        description: 'Runs of deleted agents are listed too. `since` keeps runs created at or after that instant.',
        querystring: Type.Object(
          {
            ...PageQuery,
            status: Type.Optional(Literals(RUN_STATUSES)),
            kind: Type.Optional(Literals(RUN_KINDS)),
            agentId: Type.Optional(Id),
            since: Type.Optional(Timestamp),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ runs: Type.Array(RunSummarySchema), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => {
      const { page, limit, since, ...filter } = req.query;
      // Stored timestamps are UTC ISO strings: an offset given in `since` is compared as the same instant.
      return runs.listForTenant(req.principal.tenantId, { ...filter, since: since && new Date(since).toISOString() }, page, limit);
    },
  );

  const RunParams = Type.Object({ runId: Id });

  app.get(
    '/api/v1/runs/:runId',
    {
      config: { permission: 'agents:read', agentScope: 'own' },
      schema: {
        operationId: 'getRun',
        tags: ['executions'],
        summary: 'A run with its tool calls and steps',
        params: RunParams,
        response: { 200: RunDetailsSchema, ...problems(401, 403, 404) },
      },
    },
    async (req) => runs.get(req.principal.tenantId, req.params.runId, req.principal.agentId),
  );

  app.post(
    '/api/v1/runs/:runId/cancel',
    {
      config: { permission: 'agents:write', agentScope: 'own' },
      schema: {
        operationId: 'cancelRun',
        tags: ['executions'],
        summary: 'Cancel a run: the model stream and tools are aborted; partial output is kept',
        params: RunParams,
        response: { 200: RunDetailsSchema, ...problems(401, 403, 404, 409) },
      },
    },
    async (req) => runs.cancel(req.principal, req.params.runId),
  );

  app.get(
    '/api/v1/runs/:runId/events',
    {
      config: { permission: 'agents:read', agentScope: 'own' },
      schema: {
        operationId: 'getRunEvents',
        tags: ['executions'],
        summary: 'Replay a run’s events after Last-Event-ID (header or lastEventId query), then follow live',
        description:
          '204 (the SSE standard’s “stop reconnecting”) when the run has ended, its closing event (`done` or `error`) is stored and Last-Event-ID is at or past it: an EventSource reconnecting after `done` stops there.',
        params: RunParams,
        querystring: Type.Object({ lastEventId: Type.Optional(Type.Integer({ minimum: 0 })) }, { additionalProperties: false }),
        response: {
          ...sseResponse,
          204: Type.Null({ description: 'the run has ended and every event was seen: stop reconnecting' }),
          ...problems(400, 401, 403, 404),
        },
      },
    },
    async (req, reply) => {
      const { tenantId, agentId } = req.principal;
      const runId = req.params.runId;
      const afterSeq = lastEventId(req);
      const state = await runs.eventsState(tenantId, runId, agentId);
      if (state.ended && afterSeq >= state.lastSeq) return reply.code(204).header('x-run-id', runId).send(null);
      return streamRun(runs, req, reply, { tenantId, runId, conversationId: state.conversationId, afterSeq });
    },
  );
};
