import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DomainError } from '../errors.js';
import { ProblemError, problemOf } from '../http/errors.js';
import { Id } from '../http/schemas.js';
import { openSse } from '../http/sse.js';
import { IdempotencyHeaders, REPLAYED_HEADER } from '../idempotency/schemas.js';
import { openAiError } from './errors.js';
import { CHUNK_DESCRIPTION, ChatCompletion, ChatCompletionBody, Model, ModelList, openAiErrors } from './schemas.js';
import type { OpenAiCompatService } from './service.js';

const CONVERSATION_HEADER = 'x-agentry-conversation-id';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * GET /v1/models, GET /v1/models/:model and POST /v1/chat/completions, with the API's bearer
 * credentials; registered under the /v1 prefix. Every error under /v1 leaves in OpenAI's shape: the
 * app's error handler makes its problem as everywhere, and this plugin's onSend hook rewrites it; a
 * path no route answers is this plugin's own 404 (405 for a path answered with another method).
 */
export const openaiCompatRoutes: FastifyPluginAsyncTypebox<{ service: OpenAiCompatService }> = async (app, { service }) => {
  app.addHook('onSend', (_request, reply, payload, done) => {
    const type = reply.getHeader('content-type');
    if (typeof type !== 'string' || !type.startsWith('application/problem+json') || typeof payload !== 'string') return done(null, payload);
    // A run that started (x-run-id is set once it has) would run, and cost, again if the client retried.
    const error = openAiError(JSON.parse(payload), { runStarted: reply.hasHeader('x-run-id') });
    reply.code(error.status).type('application/json; charset=utf-8').headers(error.headers);
    done(null, JSON.stringify(error.body));
  });

  // Unknown /v1 paths: OpenAI clients show the message of an error in their shape ("404 status code (no body)" otherwise).
  app.setNotFoundHandler((request) => {
    const path = request.url.split('?')[0];
    const allowed = METHODS.filter((m) => m !== request.method && app.findRoute({ method: m, url: path }));
    if (allowed.length) {
      const allow = allowed.join(', ');
      throw new ProblemError(405, 'method_not_allowed', `${request.method} is not allowed on ${path}; use ${allow}`, undefined, { allow });
    }
    throw new ProblemError(
      404,
      'route_not_found',
      `no route for ${request.method} ${path}: this server answers GET /v1/models, GET /v1/models/{model} and POST /v1/chat/completions`,
    );
  });

  app.get(
    '/models',
    {
      config: { permission: 'agents:read', agentScope: 'own' },
      schema: {
        operationId: 'listModels',
        tags: ['openai'],
        summary: 'OpenAI-compatible: the tenant’s executable agents as models (`agent:<agentId>`)',
        response: { 200: ModelList, ...openAiErrors(401, 403, 429) },
      },
    },
    async (req) => service.models(req.principal),
  );

  app.get(
    '/models/:model',
    {
      config: { permission: 'agents:read', agentScope: 'own' },
      schema: {
        operationId: 'retrieveModel',
        tags: ['openai'],
        summary: 'OpenAI-compatible: one model (`agent:<agentId>`) as GET /v1/models lists it; 404 otherwise',
        params: Type.Object({ model: Type.String({ minLength: 1, maxLength: 200, description: '`agent:<agentId>`' }) }),
        response: { 200: Model, ...openAiErrors(401, 403, 404, 429) },
      },
    },
    async (req) => service.model(req.principal, req.params.model),
  );

  app.post(
    '/chat/completions',
    {
      config: { permission: 'agents:write', agentScope: 'own' },
      schema: {
        operationId: 'createChatCompletion',
        tags: ['openai'],
        summary: 'OpenAI-compatible chat completion: a run of the agent named by model',
        description:
          `The answer carries X-Run-Id and X-Agentry-Conversation-Id headers. ${CHUNK_DESCRIPTION} ` +
          'A run whose tool call waits for a person is waited for (a stream keeps its connection with SSE comments) up to ' +
          'OPENAI_APPROVAL_WAIT_SECONDS (default 300), then answered 400 `run_awaiting_approval` (the run goes on waiting). ' +
          'A run that failed or was cancelled, and a paused agent, are 400 as well (with the code saying which): the status no official ' +
          'client retries, so a retry never starts another run. With an Idempotency-Key, a retry of the same request answers the run the first started.',
        headers: Type.Object({ [CONVERSATION_HEADER]: Type.Optional(Id), ...IdempotencyHeaders.properties }),
        body: ChatCompletionBody,
        response: { 200: ChatCompletion, ...openAiErrors(400, 401, 403, 404, 409, 413, 415, 422, 429, 503) },
      },
    },
    async (req, reply) => {
      const started = await service.start({
        principal: req.principal,
        body: req.body,
        conversationHeader: req.headers[CONVERSATION_HEADER],
        idempotencyKey: req.headers['idempotency-key'],
        trace: req.trace,
      });
      const { runId, conversationId } = started.handle;
      if (!req.body.stream) {
        reply.header('x-run-id', runId).header(CONVERSATION_HEADER, conversationId);
        if (started.replayed) reply.header(REPLAYED_HEADER, 'true');
        return service.complete(req.principal, started);
      }
      // Set on the raw response: openSse writes the head itself (and merges these into it).
      reply.raw.setHeader('x-run-id', runId);
      reply.raw.setHeader(CONVERSATION_HEADER, conversationId);
      if (started.replayed) reply.raw.setHeader(REPLAYED_HEADER, 'true');
      const sse = openSse(req, reply);
      // OpenAI's stream is `data:` lines alone (no id or event); openSse keeps the connection, heartbeat and shutdown.
      const write = (data: string) => {
        if (!sse.isClosed()) reply.raw.write(`data: ${data}\n\n`);
      };
      try {
        await service.stream(req.principal, started, {
          includeUsage: Boolean(req.body.stream_options?.include_usage),
          send: (chunk) => write(JSON.stringify(chunk)),
          closed: sse.closed,
        });
        write('[DONE]');
      } catch (err) {
        if (!(err instanceof DomainError)) req.log.error({ err, runId }, 'chat completion stream failed');
        const problem =
          err instanceof DomainError
            ? problemOf(err)
            : { status: 500, code: 'internal_error', detail: 'the stream failed; the error is in the server log' };
        write(JSON.stringify(openAiError(problem, { runStarted: true }).body));
      }
      sse.close();
    },
  );
};
