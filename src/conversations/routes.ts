import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Id, IdParams, Json, Literals, Nullable, PageQuery, problems, Timestamp } from '../http/schemas.js';
import { IdempotencyHeaders, REPLAYED_HEADER } from '../idempotency/schemas.js';
import { InjectedResult, UserId } from './schemas.js';
import { CONVERSATION_STATUSES, type ConversationsService } from './service.js';
import { ResponseFormatSchema } from '../runtime/response-format.js';

const tags = ['conversations'];
const Status = Literals(CONVERSATION_STATUSES);
const Metadata = Type.Record(Type.String({ maxLength: 128 }), Type.Unknown(), { description: 'custom tags' });

const ConversationSummary = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  agentId: Type.String(),
  appId: Nullable(Type.String()),
  userId: Nullable(Type.String({ description: 'the end user the conversation is with, if one was named' })),
  status: Type.String(),
  messageCount: Type.Integer(),
  lastMessageAt: Nullable(Timestamp),
  createdAt: Timestamp,
});
const ConversationDetails = Type.Evaluate(
  Type.Intersect([
    ConversationSummary,
    Type.Object({
      metadata: Json,
      updatedAt: Timestamp,
      activeRunId: Nullable(Type.String({ description: 'the run answering right now, if any' })),
    }),
  ]),
);
const ConversationWithParticipants = Type.Evaluate(
  Type.Intersect([
    ConversationDetails,
    Type.Object({
      participants: Type.Array(Type.Object({ type: Type.String(), id: Type.String(), name: Nullable(Type.String()) })),
    }),
  ]),
);
const Message = Type.Object({
  id: Type.String(),
  role: Type.String({ description: 'user or assistant' }),
  content: Type.String(),
  toolCalls: Type.Array(
    Type.Object({
      id: Type.Optional(Type.String({ description: 'the call’s id (absent on messages written before tool results were kept)' })),
      name: Type.String(),
      input: Type.Unknown(),
      result: Type.Optional(
        Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
          description: 'what the tool answered; null: it failed or never ended',
        }),
      ),
    }),
  ),
  tokenUsage: Nullable(Type.Object({ inputTokens: Type.Integer(), outputTokens: Type.Integer() })),
  attachments: Type.Array(Type.String()),
  runId: Nullable(Type.String()),
  createdAt: Timestamp,
});
const OnActiveRun = Type.Union([Type.Literal('reject'), Type.Literal('enqueue'), Type.Literal('inject')], {
  description: 'overrides the agent’s configuration.onActiveRun for this message',
});

export const conversationsRoutes: FastifyPluginAsyncTypebox<{ conversations: ConversationsService }> = async (app, { conversations }) => {
  app.get(
    '/api/v1/conversations',
    {
      config: { permission: 'agents:read', agentScope: 'own' },
      schema: {
        operationId: 'listConversations',
        tags,
        summary: 'List conversations, newest first',
        querystring: Type.Object(
          {
            ...PageQuery,
            agentId: Type.Optional(Id),
            status: Type.Optional(Status),
            appId: Type.Optional(Type.String({ maxLength: 128 })),
            userId: Type.Optional(UserId),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            conversations: Type.Array(ConversationSummary),
            total: Type.Integer(),
            page: Type.Integer(),
            limit: Type.Integer(),
          }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => {
      const { page, limit, ...filter } = req.query;
      // An agent's own token lists that agent's conversations only.
      if (req.principal.agentId !== undefined) filter.agentId = req.principal.agentId;
      return conversations.list(req.principal.tenantId, filter, page, limit);
    },
  );

  app.post(
    '/api/v1/conversations',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'createConversation',
        tags,
        summary: 'Start a conversation with an agent',
        body: Type.Object(
          {
            agentId: Id,
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            appId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
            userId: Type.Optional(UserId),
            metadata: Type.Optional(Metadata),
          },
          { additionalProperties: false },
        ),
        response: { 201: ConversationDetails, ...problems(400, 401, 403, 404) },
      },
    },
    async (req, reply) => reply.code(201).send(await conversations.create(req.principal, req.body)),
  );

  app.get(
    '/api/v1/conversations/stats',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getConversationStats',
        tags,
        summary: 'Conversation statistics of the tenant',
        response: {
          200: Type.Object({
            total: Type.Integer(),
            active: Type.Integer(),
            completed: Type.Integer(),
            archived: Type.Integer(),
            totalMessages: Type.Integer(),
            averageMessagesPerConversation: Type.Number(),
            averageDurationMs: Type.Integer({ description: 'mean of lastMessageAt - createdAt' }),
          }),
          ...problems(401, 403),
        },
      },
    },
    async (req) => conversations.stats(req.principal.tenantId),
  );

  app.get(
    '/api/v1/conversations/:id',
    {
      config: { permission: 'agents:read', agentScope: 'own' },
      schema: {
        operationId: 'getConversation',
        tags,
        summary: 'A conversation with its participants and metadata',
        params: IdParams,
        response: { 200: ConversationWithParticipants, ...problems(401, 403, 404) },
      },
    },
    async (req) => conversations.get(req.principal.tenantId, req.params.id, req.principal.agentId),
  );

  app.patch(
    '/api/v1/conversations/:id',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'updateConversation',
        tags,
        summary: 'Rename, change status (active, completed, archived) or replace metadata',
        params: IdParams,
        body: Type.Object(
          {
            name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
            status: Type.Optional(Status),
            metadata: Type.Optional(Metadata),
          },
          { additionalProperties: false },
        ),
        response: { 200: ConversationWithParticipants, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) => conversations.update(req.principal, req.params.id, req.body),
  );

  app.delete(
    '/api/v1/conversations/:id',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'deleteConversation',
        tags,
        summary: 'Delete a conversation (soft: kept for audit, gone from the API)',
        params: IdParams,
        response: { 204: Type.Null(), ...problems(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await conversations.delete(req.principal, req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/v1/conversations/:id/messages',
    {
      config: { permission: 'agents:read', agentScope: 'own' },
      schema: {
        operationId: 'listMessages',
        tags,
        summary: 'Messages, oldest first: the `limit` newest ones older than `before`',
        params: IdParams,
        querystring: Type.Object(
          { limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }), before: Type.Optional(Id) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ messages: Type.Array(Message), hasMore: Type.Boolean() }), ...problems(400, 401, 403, 404) },
      },
    },
    async (req) =>
      conversations.messages(req.principal.tenantId, req.params.id, {
        limit: req.query.limit,
        before: req.query.before,
        agentId: req.principal.agentId,
      }),
  );

  app.post(
    '/api/v1/conversations/:id/messages',
    {
      config: { permission: 'agents:write', agentScope: 'own' },
      schema: {
        operationId: 'sendMessage',
        tags,
        summary: 'Send a message; answers with the agent’s reply',
        params: IdParams,
        headers: IdempotencyHeaders,
        body: Type.Object(
          {
            content: Type.String({ minLength: 1, maxLength: 100_000 }),
            attachments: Type.Optional(Type.Array(Id, { maxItems: 20 })),
            onActiveRun: Type.Optional(OnActiveRun),
            responseFormat: Type.Optional(ResponseFormatSchema),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            message: Message,
            cost: Type.Number({ description: 'USD' }),
            runId: Type.String(),
            structuredOutput: Type.Optional(
              Type.Record(Type.String(), Type.Unknown(), { description: 'the answer as an object, with a responseFormat' }),
            ),
          }),
          202: InjectedResult,
          ...problems(400, 401, 403, 404, 409, 422, 502),
        },
      },
    },
    async (req, reply) => {
      const result = await conversations.postOnce(req.principal, req.params.id, req.body, {
        key: req.headers['idempotency-key'],
        trace: req.trace,
      });
      if (result.replayed) reply.header(REPLAYED_HEADER, 'true');
      if (result.injected) return reply.code(202).send(result.injected);
      return reply.send(result.reply!);
    },
  );

  app.post(
    '/api/v1/conversations/:id/inject',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'injectMessage',
        tags,
        summary: 'Send a message to the agent while it is still answering; it joins at the next step',
        params: IdParams,
        body: Type.Object({ content: Type.String({ minLength: 1, maxLength: 100_000 }) }, { additionalProperties: false }),
        response: { 202: Type.Object({ messageId: Type.String(), runId: Type.String() }), ...problems(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) => reply.code(202).send(await conversations.inject(req.principal, req.params.id, req.body.content)),
  );
};
