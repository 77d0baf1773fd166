import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AgentsService } from '../agents/service.js';
import type { FilesService } from '../conversations/files.js';
import { InjectedResult } from '../conversations/schemas.js';
import { Conflict, RunFailed } from '../errors.js';
import { Id, IdParams, Json, Nullable, PageQuery, Timestamp, problems } from '../http/schemas.js';
import { lastEventId, openSse } from '../http/sse.js';
import type { RunHandle, RunsService } from './service.js';
import { isInjected } from './service.js';

/**
 * Executions and runs: POST /agents/:id/execute|chat|stream, GET /agents/:id/runs, and /runs/:runId.
 * They live here rather than in agents/ because each is a run.
 */

const TokenUsage = Type.Object({ inputTokens: Type.Integer(), outputTokens: Type.Integer() });
const RunErrorSchema = Nullable(Type.Object({ code: Type.String(), message: Type.String() }));
const ToolCallBrief = Type.Object({ id: Type.String(), name: Type.String(), input: Type.Unknown(), result: Nullable(Json) });

const ExecuteBody = Type.Object(
  {
    message: Type.String({ minLength: 1, maxLength: 100_000 }),
    conversationId: Type.Optional(Id),
    enableTools: Type.Optional(Type.Boolean({ default: true })),
    maxTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 200_000 })),
    stream: Type.Optional(Type.Boolean({ default: false })),
    attachments: Type.Optional(Type.Array(Id, { maxItems: 20, description: 'file ids from POST /api/v1/files' })),
    onActiveRun: Type.Optional(Type.Union([Type.Literal('reject'), Type.Literal('enqueue'), Type.Literal('inject')])),
  },
  { additionalProperties: false },
);
type ExecuteBody = Static<typeof ExecuteBody>;

const ExecutionResult = Type.Object({
  output: Type.String(),
  conversationId: Type.String(),
  runId: Type.String(),
  status: Type.String(),
  cost: Type.Number({ description: 'USD' }),
  tokenUsage: TokenUsage,
  toolCalls: Type.Array(Type.Object({ name: Type.String(), input: Type.Unknown(), result: Nullable(Json) })),
  duration: Type.Integer({ description: 'milliseconds' }),
});

export const RunSummarySchema = Type.Object({
  id: Type.String(),
  runId: Type.String(),
  agentId: Type.String(),
  conversationId: Nullable(Type.String()),
  taskId: Nullable(Type.String()),
  kind: Type.String(),
  status: Type.String({ description: 'queued, running, completed, failed, cancelled' }),
  model: Type.String(),
  output: Type.String(),
  error: RunErrorSchema,
  cost: Type.Number({ description: 'USD' }),
  duration: Nullable(Type.Integer({ description: 'milliseconds' })),
  tokenUsage: TokenUsage,
  toolCalls: Type.Array(ToolCallBrief),
  createdAt: Timestamp,
  startedAt: Nullable(Timestamp),
  completedAt: Nullable(Timestamp),
});

export const RunDetailsSchema = Type.Evaluate(Type.Intersect([
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
      }),
    ),
    warnings: Type.Array(Type.String(), {
      description: 'tool sources that could not contribute (an MCP server down), tools left out for an unusable input schema, and what the model provider warned about (a setting the model does not support), each once',
    }),
    budget: Type.Object(
      {
        tenant: Type.Optional(Type.Object({ monthlyBudgetUsd: Type.Number(), spentUsd: Type.Number() })),
        agent: Type.Optional(Type.Object({ monthlyBudgetUsd: Type.Number(), spentUsd: Type.Number() })),
      },
      { description: 'budgets in force when the run started and the month-to-date spend before it (USD)' },
    ),
  }),
]));

const SSE_DESCRIPTION =
  'Server-Sent Events: token {text}, tool_call_start {id,name,input}, tool_call_end {id,result}, done {conversationId,runId,cost,tokenUsage}, error {code,message}; each with an id for Last-Event-ID (GET /api/v1/runs/{runId}/events).';
const sseResponse = { 200: Type.String({ description: SSE_DESCRIPTION, contentMediaType: 'text/event-stream' }) };

/** Streams a run's events to the client until the run ends; the run goes on if the client leaves. */
async function streamRun(runs: RunsService, request: FastifyRequest, reply: FastifyReply, tenantId: string, runId: string, afterSeq: number) {
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

export const runsRoutes: FastifyPluginAsyncTypebox<{ runs: RunsService; agents: AgentsService; files: FilesService }> = async (
  app,
  { runs, agents, files },
) => {
  async function startExecution(req: FastifyRequest, agentId: string, body: ExecuteBody, kind: 'execute' | 'chat' | 'stream') {
    const tenantId = req.principal.tenantId;
    const agent = await agents.get(tenantId, agentId);
    const modelContext = body.attachments?.length ? await files.modelContext(tenantId, body.attachments) : undefined;
    return runs.start({
      principal: req.principal,
      agent,
      kind,
      content: body.message,
      modelContext,
      attachments: body.attachments,
      conversationId: body.conversationId,
      enableTools: body.enableTools,
      maxTokens: body.maxTokens,
      onActiveRun: body.onActiveRun,
    });
  }

  async function respondJson(req: FastifyRequest, reply: FastifyReply, handle: RunHandle) {
    const run = await runs.outcome(req.principal.tenantId, handle);
    if (run.status === 'failed') {
      throw new RunFailed(run.error?.code ?? 'run_failed', `the run failed: ${run.error?.message ?? 'unknown error'} (run ${run.runId})`);
    }
    if (run.status === 'cancelled') throw new Conflict('run_cancelled', `the run was cancelled (run ${run.runId})`);
    return reply.send({
      output: run.output,
      conversationId: run.conversationId,
      runId: run.runId,
      status: run.status,
      cost: run.cost,
      tokenUsage: run.tokenUsage,
      toolCalls: run.toolCalls.map((c) => ({ name: c.name, input: c.input, result: c.result })),
      duration: run.duration,
    });
  }

  const executeSchema = (summary: string, streaming: 'always' | 'optional') => ({
    tags: ['executions'],
    summary,
    params: IdParams,
    body: ExecuteBody,
    response: {
      ...(streaming === 'always' ? sseResponse : { 200: ExecutionResult }),
      202: InjectedResult,
      ...problems(400, 401, 402, 403, 404, 409, 413, 415, 429, 502),
    },
  });

  app.post('/api/v1/agents/:id/execute', {
    config: { permission: 'agents:write', agentScope: { param: 'id' } },
    schema: {
      ...executeSchema('Execute an agent: JSON result, or SSE when stream is true', 'optional'),
      description: `With "stream": true the answer is ${SSE_DESCRIPTION}`,
    },
  }, async (req, reply) => {
    const handle = await startExecution(req, req.params.id, req.body, req.body.stream ? 'stream' : 'execute');
    if (isInjected(handle)) return reply.code(202).send(handle);
    if (req.body.stream) return streamRun(runs, req, reply, req.principal.tenantId, handle.runId, 0);
    return respondJson(req, reply, handle);
  });

  for (const [path, summary] of [
    ['/api/v1/agents/:id/chat', 'Chat with an agent (always streams over SSE)'],
    ['/api/v1/agents/:id/stream', 'Stream an agent’s answer over SSE (same body as execute)'],
  ] as const) {
    app.post(path, { config: { permission: 'agents:write', agentScope: { param: 'id' } }, schema: executeSchema(summary, 'always') }, async (req, reply) => {
      const handle = await startExecution(req, req.params.id, req.body, path.endsWith('chat') ? 'chat' : 'stream');
      if (isInjected(handle)) return reply.code(202).send(handle);
      return streamRun(runs, req, reply, req.principal.tenantId, handle.runId, 0);
    });
  }

  app.get('/api/v1/agents/:id/runs', {
    config: { permission: 'agents:read', agentScope: { param: 'id' } },
    schema: {
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
  }, async (req) => runs.listForAgent(req.principal.tenantId, req.params.id, req.query.page, req.query.limit));

  const RunParams = Type.Object({ runId: Id });

  app.get('/api/v1/runs/:runId', {
    config: { permission: 'agents:read', agentScope: 'own' },
    schema: {
      tags: ['executions'],
      summary: 'A run with its tool calls and steps',
      params: RunParams,
      response: { 200: RunDetailsSchema, ...problems(401, 403, 404) },
    },
  }, async (req) => runs.get(req.principal.tenantId, req.params.runId, req.principal.agentId));

  app.post('/api/v1/runs/:runId/cancel', {
    config: { permission: 'agents:write', agentScope: 'own' },
    schema: {
      tags: ['executions'],
      summary: 'Cancel a run: the model stream and tools are aborted; partial output is kept',
      params: RunParams,
      response: { 200: RunDetailsSchema, ...problems(401, 403, 404, 409) },
    },
  }, async (req) => runs.cancel(req.principal, req.params.runId));

  app.get('/api/v1/runs/:runId/events', {
    config: { permission: 'agents:read', agentScope: 'own' },
    schema: {
      tags: ['executions'],
      summary: 'Replay a run’s events after Last-Event-ID (header or lastEventId query), then follow live',
      params: RunParams,
      querystring: Type.Object({ lastEventId: Type.Optional(Type.Integer({ minimum: 0 })) }, { additionalProperties: false }),
      response: { ...sseResponse, ...problems(400, 401, 403, 404) },
    },
  }, async (req, reply) => {
    if (req.principal.agentId !== undefined) await runs.get(req.principal.tenantId, req.params.runId, req.principal.agentId);
    return streamRun(runs, req, reply, req.principal.tenantId, req.params.runId, lastEventId(req));
  });
};
