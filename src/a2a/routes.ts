import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { NotFound } from '../errors.js';
import { problems } from '../http/schemas.js';
import { openSse } from '../http/sse.js';
import { AgentCard, CardParams, JsonRpcRequest, JsonRpcResponse } from './schemas.js';
import { type A2aService, rpcErrorObject } from './service.js';

const STREAM_DESCRIPTION =
  'message/stream and tasks/resubscribe answer text/event-stream: each event a `data:` line holding a JSON-RPC response whose result is ' +
  'the task, then artifact-update events (the reply’s text in chunks), then a status-update with final: true.';

/**
 * The A2A routes (docs/clients.md, "Agent2Agent (A2A)"): each executable agent's public Agent Card
 * under its tenant's path, and its JSON-RPC endpoint with the API's bearer credentials.
 */
export const a2aRoutes: FastifyPluginAsyncTypebox<{ service: A2aService }> = async (app, { service }) => {
  app.get(
    '/a2a/:tenantId/agents/:agentId/.well-known/agent-card.json',
    {
      config: { public: true },
      schema: {
        operationId: 'getA2aAgentCard',
        tags: ['a2a'],
        summary:
          'A2A: the agent’s Agent Card (public; only executable agents whose configuration.publicAgentCard is on, only under their own tenant’s path)',
        params: CardParams,
        response: { 200: AgentCard, ...problems(400, 404) },
      },
    },
    async (req) => service.card(req.params.tenantId, req.params.agentId),
  );

  app.post(
    '/a2a/:tenantId/agents/:agentId',
    {
      config: { permission: 'agents:write', agentScope: { param: 'agentId' } },
      // The JSON-RPC envelope is checked by the service: a malformed call answers a JSON-RPC error.
      validatorCompiler: ({ httpPart }) => (httpPart === 'body' ? () => true : undefined) as never,
      schema: {
        operationId: 'callA2aAgent',
        tags: ['a2a'],
        summary: 'A2A JSON-RPC: message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe',
        description: `An A2A task is a run of the agent; its contextId the run's conversation. ${STREAM_DESCRIPTION}`,
        params: CardParams,
        body: JsonRpcRequest,
        response: { 200: JsonRpcResponse, ...problems(400, 401, 403, 404, 413, 415, 429) },
      },
    },
    async (req, reply) => {
      if (req.params.tenantId !== req.principal.tenantId) throw new NotFound('agent');
      const agent = await service.agentOf(req.principal.tenantId, req.params.agentId);
      const answer = await service.call(req.principal, agent, req.body, req.trace);
      if (answer.kind === 'response') {
        if (answer.failure !== undefined) req.log.error({ err: answer.failure }, 'A2A call failed');
        return answer.body;
      }
      const sse = openSse(req, reply);
      const write = (message: object) => {
        if (!sse.isClosed()) reply.raw.write(`data: ${JSON.stringify(message)}\n\n`);
      };
      try {
        await answer.events((result) => write({ jsonrpc: '2.0', id: answer.id, result }), sse.closed);
      } catch (err) {
        // The stream has begun: its failure is its last event, a JSON-RPC error (an unexpected one says no more than "internal error").
        const { error, unexpected } = rpcErrorObject(err);
        if (unexpected) req.log.error({ err }, 'A2A stream failed');
        write({ jsonrpc: '2.0', id: answer.id, error });
      } finally {
        sse.close();
      }
    },
  );
};
