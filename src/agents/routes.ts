import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { IdParams, problems } from '../http/schemas.js';
import { SerializedOnce } from '../http/serialized.js';
import { AgentSummary, CreateAgentBody, DuplicateAgentBody, ListAgentsQuery, UpdateAgentBody } from './schemas.js';
import type { AgentsService } from './service.js';

const AgentRef = Type.Ref('Agent');
const tags = ['agents'];

export const agentsRoutes: FastifyPluginAsyncTypebox<{ agents: AgentsService }> = async (app, { agents }) => {
  // The hottest reads answer from cached, frozen values: their JSON is made once per value.
  const listJson = new SerializedOnce();
  const agentJson = new SerializedOnce();

  app.get(
    '/api/v1/agents',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listAgents',
        tags,
        summary: 'List agents',
        querystring: ListAgentsQuery,
        response: {
          200: Type.Object({ agents: Type.Array(AgentSummary), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req, reply) => {
      const { page, limit, ...filter } = req.query;
      return listJson.send(reply, await agents.list(req.principal.tenantId, filter, page, limit));
    },
  );

  app.post(
    '/api/v1/agents',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'createAgent',
        tags,
        summary: 'Create an agent',
        body: CreateAgentBody,
        response: { 201: AgentRef, ...problems(400, 401, 403, 413, 415) },
      },
    },
    async (req, reply) => reply.code(201).send(await agents.create(req.principal, req.body)),
  );

  app.get(
    '/api/v1/agents/:id',
    {
      config: { permission: 'agents:read', agentScope: { param: 'id' } },
      schema: {
        operationId: 'getAgent',
        tags,
        summary: 'Get an agent with its tools and configuration',
        params: IdParams,
        response: { 200: AgentRef, ...problems(401, 403, 404) },
      },
    },
    async (req, reply) => agentJson.send(reply, await agents.get(req.principal.tenantId, req.params.id)),
  );

  app.post(
    '/api/v1/agents/:id',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'updateAgent',
        tags,
        summary: 'Update an agent (only the fields given change)',
        params: IdParams,
        body: UpdateAgentBody,
        response: { 200: AgentRef, ...problems(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (req) => agents.update(req.principal, req.params.id, req.body ?? {}),
  );

  app.delete(
    '/api/v1/agents/:id',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'deleteAgent',
        tags,
        summary:
          'Delete an agent; its conversations, runs and audit events stay; its keys are revoked and every token naming it stops being active',
        params: IdParams,
        response: { 204: Type.Null(), ...problems(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await agents.delete(req.principal, req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v1/agents/:id/pause',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'pauseAgent',
        tags,
        summary:
          "Pause an agent: new executions are refused; a registered agent's identity is suspended (no SVIDs, badges, exchanges; its tokens are denied)",
        params: IdParams,
        response: { 200: AgentRef, ...problems(401, 403, 404, 409) },
      },
    },
    async (req) => agents.setPaused(req.principal, req.params.id, true),
  );

  app.post(
    '/api/v1/agents/:id/resume',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'resumeAgent',
        tags,
        summary: 'Resume a paused agent: available again, or registered again for an externally hosted agent',
        params: IdParams,
        response: { 200: AgentRef, ...problems(401, 403, 404, 409) },
      },
    },
    async (req) => agents.setPaused(req.principal, req.params.id, false),
  );

  app.post(
    '/api/v1/agents/:id/duplicate',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'duplicateAgent',
        tags,
        summary: 'Duplicate an agent (prompts, tools, configuration; not keys or history)',
        params: IdParams,
        body: DuplicateAgentBody,
        response: { 201: AgentRef, ...problems(400, 401, 403, 404) },
      },
    },
    async (req, reply) => reply.code(201).send(await agents.duplicate(req.principal, req.params.id, req.body?.name)),
  );

  app.get(
    '/api/v1/apps',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listApps',
        tags: ['tenancy'],
        summary: 'List the apps (workspaces) in use in the tenant',
        response: {
          200: Type.Object({ apps: Type.Array(Type.Object({ id: Type.String(), agentCount: Type.Integer() })), total: Type.Integer() }),
          ...problems(401, 403),
        },
      },
    },
    async (req) => {
      const apps = await agents.listApps(req.principal.tenantId);
      return { apps, total: apps.length };
    },
  );
};
