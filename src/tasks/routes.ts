import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { jsonParser } from '../http/json.js';
import { Id, IdParams, PageQuery, problems } from '../http/schemas.js';
import { IdempotencyHeaders, REPLAYED_HEADER } from '../idempotency/schemas.js';
import { RunDetailsSchema, RunSummarySchema } from '../runs/routes.js';
import { CreateTaskBody, Fire, HookAccepted, ListTasksQuery, RunStarted, RunTaskBody, Task, TaskSummary } from './schemas.js';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER } from './webhook-signatures.js';
import type { TasksService } from './service.js';

const TaskRef = Type.Ref('Task');
const tags = ['tasks'];
const Paging = Type.Object(PageQuery, { additionalProperties: false });

const TaskDetails = Type.Evaluate(
  Type.Intersect([
    Task,
    Type.Object({
      output: Type.Union([Type.String(), Type.Null()], { description: 'output of the latest completed run' }),
      runs: Type.Array(RunSummarySchema, { description: 'the 10 most recent runs, newest first' }),
      runCount: Type.Integer(),
      fires: Type.Array(Fire, { description: 'the 20 most recent fire decisions, newest first' }),
    }),
  ]),
);

const RunParams = Type.Object({ runId: Id });

export const tasksRoutes: FastifyPluginAsyncTypebox<{ tasks: TasksService }> = async (app, { tasks }) => {
  app.get(
    '/api/v1/tasks',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listTasks',
        tags,
        summary: 'List tasks, newest first',
        querystring: ListTasksQuery,
        response: {
          200: Type.Object({ tasks: Type.Array(TaskSummary), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => {
      return tasks.list(req.principal.tenantId, req.query);
    },
  );

  app.post(
    '/api/v1/tasks',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'createTask',
        tags,
        summary: 'Create a task (one-time: queued at once; scheduled: cron; triggered: webhook or platform event)',
        description: 'A webhook-triggered task answers trigger.url and trigger.secret; the secret is shown this once.',
        headers: IdempotencyHeaders,
        body: CreateTaskBody,
        response: { 201: TaskRef, ...problems(400, 401, 403, 404, 409, 413, 415, 422) },
      },
    },
    async (req, reply) => {
      const { task, replayed } = await tasks.createOnce(req.principal, req.body, req.headers['idempotency-key'], req.trace);
      // A replay answers 201 as the first time (the webhook secret is not shown again), marked as a replay.
      if (replayed) reply.header(REPLAYED_HEADER, 'true');
      // A webhook task's secret is in this response alone: no cache (browser, proxy) may keep it.
      return reply.code(201).header('cache-control', 'no-store').send(task);
    },
  );

  app.get(
    '/api/v1/tasks/pending-approval',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listTasksPendingApproval',
        tags,
        summary: 'Tasks awaiting a human decision, oldest first',
        querystring: Paging,
        response: {
          200: Type.Object({ tasks: Type.Array(TaskRef), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => tasks.pendingApproval(req.principal.tenantId, req.query),
  );

  app.get(
    '/api/v1/tasks/runs/:runId',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getTaskRun',
        tags,
        summary: 'A task run with its tool calls and steps (also after the task was deleted)',
        params: RunParams,
        response: { 200: RunDetailsSchema, ...problems(401, 403, 404) },
      },
    },
    async (req) => tasks.getRun(req.principal.tenantId, req.params.runId),
  );

  app.get(
    '/api/v1/tasks/:id',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getTask',
        tags,
        summary: 'A task with its recent runs, latest output and recent fire decisions',
        params: IdParams,
        response: { 200: TaskDetails, ...problems(401, 403, 404) },
      },
    },
    async (req) => tasks.details(req.principal.tenantId, req.params.id),
  );

  app.delete(
    '/api/v1/tasks/:id',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'deleteTask',
        tags,
        summary: 'Delete a task: schedules and triggers stop, queued work is dropped, running runs stop; runs stay readable',
        params: IdParams,
        response: { 204: Type.Null(), ...problems(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await tasks.delete(req.principal, req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v1/tasks/:id/run',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'runTask',
        tags,
        summary: 'Run the task now (any type); input is merged over the task input for this run',
        description:
          'Starts a run of the task at once, whatever its type or schedule. A task awaiting approval is not run: ' +
          'the answer is 409 `task_awaiting_approval` (running it would bypass the approval); approve it first ' +
          '(POST /api/v1/tasks/{id}/approve).',
        params: IdParams,
        body: RunTaskBody,
        response: {
          202: RunStarted,
          ...problems(400, 401, 403, 404, 413, 415),
          409: Type.Ref('Problem', {
            description:
              '`task_awaiting_approval`: the task waits for approval (approve it, then run it); `task_not_runnable`: an approval ' +
              'task, which acts when approved; `agent_not_found`: the task’s agent was deleted',
          }),
        },
      },
    },
    async (req, reply) => reply.code(202).send(await tasks.run(req.principal, req.params.id, req.body?.input, req.trace)),
  );

  app.post(
    '/api/v1/tasks/:id/cancel',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'cancelTask',
        tags,
        summary: 'Cancel a pending or running task: queued work is dropped, a running agent stops at its next tool boundary',
        params: IdParams,
        response: { 200: TaskRef, ...problems(401, 403, 404, 409) },
      },
    },
    async (req) => tasks.cancel(req.principal, req.params.id),
  );

  app.post(
    '/api/v1/tasks/:id/retry',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'retryTask',
        tags,
        summary: 'Run a failed task again with the same configuration',
        params: IdParams,
        response: { 202: RunStarted, ...problems(401, 403, 404, 409) },
      },
    },
    async (req, reply) => reply.code(202).send(await tasks.retry(req.principal, req.params.id, req.trace)),
  );

  app.post(
    '/api/v1/tasks/:id/approve',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'approveTask',
        tags,
        summary: 'Approve a task awaiting approval: it is queued, or its action is performed',
        description:
          'The answer is the task as the approval left it: `pending`, a one-time task’s run queued (`queuedAt`; it may start at once, so ' +
          'read the task or its runs for what came of it), a scheduled one’s first time in `nextRunAt`; or, for an approval action, ' +
          '`completed` or `failed` once the action ran. An agent’s skill or ' +
          'connector request also needs the permission of what approving performs (skills:write, settings:write; else 403).',
        params: IdParams,
        response: { 200: TaskRef, ...problems(401, 403, 404, 409) },
      },
    },
    async (req) => tasks.approve(req.principal, req.params.id, req.trace),
  );

  app.post(
    '/api/v1/tasks/:id/reject',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'rejectTask',
        tags,
        summary: 'Reject a task awaiting approval: it is cancelled',
        description:
          'An agent’s skill or connector request also needs the permission of what approving it would perform (skills:write, settings:write; else 403).',
        params: IdParams,
        response: { 200: TaskRef, ...problems(401, 403, 404, 409) },
      },
    },
    async (req) => tasks.reject(req.principal, req.params.id),
  );

  app.get(
    '/api/v1/tasks/:id/runs',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listTaskRuns',
        tags,
        summary: 'The task’s runs, newest first',
        params: IdParams,
        querystring: Paging,
        response: {
          200: Type.Object({ runs: Type.Array(RunSummarySchema), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403, 404),
        },
      },
    },
    async (req) => tasks.listRuns(req.principal.tenantId, req.params.id, req.query),
  );

  app.get(
    '/api/v1/tasks/:id/fires',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listTaskFires',
        tags,
        summary: 'The task’s fire decisions (cron times, webhook deliveries, platform events), newest first',
        params: IdParams,
        querystring: Paging,
        response: {
          200: Type.Object({ fires: Type.Array(Fire), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403, 404),
        },
      },
    },
    async (req) => tasks.listFires(req.principal.tenantId, req.params.id, req.query),
  );
};

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: Buffer;
  }
}

/** The webhook's body as the OpenAPI document declares it: any JSON, the run's input; none is `{}`. */
const HOOK_REQUEST_BODY = {
  description: 'any JSON value (at most 1 MiB): the input of the task run it fires; an empty body is {}',
  required: false,
  content: { 'application/json': { schema: { description: 'any JSON value' }, example: { event: 'order.created', orderId: 'A-1001' } } },
};

/**
 * `POST /api/v1/hooks/:taskId`: public, authenticated by the HMAC signature over the raw body, so
 * this route keeps the body as bytes and parses it (with the platform's JSON parser) only once
 * the signature holds.
 */
export const hooksRoutes: FastifyPluginAsyncTypebox<{ tasks: TasksService }> = async (app, { tasks }) => {
  const parseJson = jsonParser(app);
  const parse = (request: FastifyRequest) => (raw: Buffer) =>
    new Promise<unknown>((resolve, reject) =>
      parseJson(request, raw.toString('utf8'), (err, value) => (err ? reject(Object.assign(err, { statusCode: 400 })) : resolve(value))),
    );
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    request.rawBody = body as Buffer;
    done(null, undefined);
  });

  app.post(
    '/api/v1/hooks/:taskId',
    {
      // The body is read as bytes (the signature covers them), so no schema validates it: declared here for the document.
      config: { public: true, requestBody: HOOK_REQUEST_BODY },
      schema: {
        operationId: 'triggerTaskWebhook',
        tags,
        summary: 'Webhook trigger of a task: the JSON body becomes the run input',
        description:
          `Signed with the task secret: ${TIMESTAMP_HEADER}: <unix seconds>, ${SIGNATURE_HEADER}: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">. ` +
          'Deliveries more than 5 minutes from the server time, or with a bad signature, are refused (401) and run nothing; the same delivery twice fires once. ' +
          'An id with no webhook answers as a bad signature does (401), so ids cannot be probed.',
        params: Type.Object({ taskId: Id }),
        response: { 202: HookAccepted, ...problems(400, 401, 409, 413, 415) },
      },
    },
    async (req, reply) => {
      const result = await tasks.webhook({
        taskId: req.params.taskId,
        headers: req.headers,
        rawBody: req.rawBody ?? Buffer.alloc(0),
        parse: parse(req),
        trace: req.trace,
      });
      return reply.code(202).send(result);
    },
  );
};
