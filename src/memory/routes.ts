import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../http/schemas.js';
import {
  MEMORY_BLOCK_MAX_CHARS,
  MEMORY_MAX_BLOCKS,
  MemoryBlock,
  MemoryBlockList,
  MemoryBlockParams,
  MemoryParams,
  MemoryVersionPage,
  PutMemoryBody,
  ScopeQuery,
  VersionsQuery,
} from './schemas.js';
import type { MemoryService } from './service.js';

const tags = ['memory'];
const SCOPE = 'Without userId, the agent’s own blocks (every run of the agent sees them); with it, that end user’s.';

/**
 * An agent's memory blocks: /api/v1/agents/:id/memory[/:label[/versions]]. Reading takes agents:read,
 * changing agents:write, as reading and editing the agent itself; an agent's own token is refused
 * (it changes its memory through its tools, within its runs).
 */
export const memoryRoutes: FastifyPluginAsyncTypebox<{ memory: MemoryService }> = async (app, { memory }) => {
  /** The block a request names: the agent's (path), by label (path), of the scope its userId names (agent-wide without). */
  const blockOf = (params: { id: string; label: string }, query: { userId?: string }) => ({
    agentId: params.id,
    label: params.label,
    userId: query.userId ?? null,
  });

  app.get(
    '/api/v1/agents/:id/memory',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listMemoryBlocks',
        tags,
        summary: 'List an agent’s memory blocks (agent-wide, or one user’s)',
        description: `${SCOPE} A scope holds at most ${MEMORY_MAX_BLOCKS} blocks of ${MEMORY_BLOCK_MAX_CHARS} characters each.`,
        params: MemoryParams,
        querystring: ScopeQuery,
        response: { 200: MemoryBlockList, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) => memory.list(req.principal.tenantId, req.params.id, req.query.userId ?? null),
  );

  app.get(
    '/api/v1/agents/:id/memory/:label',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getMemoryBlock',
        tags,
        summary: 'Read one memory block',
        description: SCOPE,
        params: MemoryBlockParams,
        querystring: ScopeQuery,
        response: { 200: MemoryBlock, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) => memory.get(req.principal.tenantId, blockOf(req.params, req.query)),
  );

  app.put(
    '/api/v1/agents/:id/memory/:label',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'putMemoryBlock',
        tags,
        summary: 'Set a memory block’s text (made when there is none)',
        description: `${SCOPE} Every change is a version (GET .../versions) and an audit event; the same text again changes nothing. 201 when the block is made, 200 when changed. 409 memory_block_limit: the scope already holds ${MEMORY_MAX_BLOCKS} blocks; 409 version_mismatch: the block is not at the version given.`,
        params: MemoryBlockParams,
        querystring: ScopeQuery,
        body: PutMemoryBody,
        response: { 200: MemoryBlock, 201: MemoryBlock, ...problems(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (req, reply) => {
      const { block, created } = await memory.put(req.principal, blockOf(req.params, req.query), {
        value: req.body.value,
        expectedVersion: req.body.version,
      });
      return reply.code(created ? 201 : 200).send(block);
    },
  );

  app.delete(
    '/api/v1/agents/:id/memory/:label',
    {
      config: { permission: 'agents:write' },
      schema: {
        operationId: 'deleteMemoryBlock',
        tags,
        summary: 'Delete a memory block (its versions stay)',
        description: SCOPE,
        params: MemoryBlockParams,
        querystring: ScopeQuery,
        response: { 204: Type.Null(), ...problems(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) => {
      await memory.delete(req.principal, blockOf(req.params, req.query));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/v1/agents/:id/memory/:label/versions',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listMemoryBlockVersions',
        tags,
        summary: 'A memory block’s versions, newest first',
        description: `${SCOPE} Each change with the text before and after it and who made it (an agent's changes name their run); a deleted block's versions stay.`,
        params: MemoryBlockParams,
        querystring: VersionsQuery,
        response: { 200: MemoryVersionPage, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const { page, limit, ...scope } = req.query;
      return memory.versions(req.principal.tenantId, blockOf(req.params, scope), { page, limit });
    },
  );
};
