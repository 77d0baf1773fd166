import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyReply } from 'fastify';
import type { AgentsService } from '../agents/service.js';
import { Id, problems } from '../http/schemas.js';
import { ToolError } from '../runtime/tools/types.js';
import type { Permission } from '../tenancy/permissions.js';
import type { SkillTools, ToolCaller } from './tools.js';

/**
 * `/api/v1/agents/:agentId/mcp`: the agent's skill and connector tools over MCP (Streamable HTTP), for
 * agents that run elsewhere (registered external agents included). Stateless: every POST gets a fresh
 * MCP server and transport (no session), answered as JSON. GET (server-initiated stream) and DELETE
 * (session end) have nothing to serve without sessions: 405, as the MCP specification allows.
 * Authenticated like the rest of the API (Bearer API key, permission skills:read); the agent must be
 * in the caller's tenant (404 otherwise). Each tool also needs what its HTTP twin needs (buildMcpServer).
 */

const SERVER_INFO = { name: 'agentry-skills', version: '0.1.0' };

/** A tool's result as MCP content: the JSON object as text, and as structured content. */
function toolResult(value: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value, ...(isError ? { isError: true } : {}) };
}

/**
 * The MCP server of one request. `permissions` are the calling credential's: each tool needs what its
 * HTTP twin needs (skill_request and connector_request create approval tasks: agents:write, as
 * POST /api/v1/tasks), else it answers a `forbidden` error result and does nothing.
 */
function buildMcpServer(tools: SkillTools, caller: ToolCaller, permissions: ReadonlySet<Permission>): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions: `Skills and integrations of the Agentry agent ${caller.agent.name}. Use skill_discover to see skills, skill_query to read one assigned to this agent.`,
  });
  const defs = tools.toolsFor(caller.agent);
  if (!defs.length) {
    // McpServer installs its tool handlers with the first tool; an agent without the builtin groups
    // still answers tools/list, with no tools.
    server.server.registerCapabilities({ tools: {} });
    server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
    server.server.setRequestHandler(CallToolRequestSchema, (req) => {
      throw new McpError(ErrorCode.InvalidParams, `Tool ${req.params.name} not found`);
    });
  }
  for (const def of defs) {
    server.registerTool(def.name, { description: def.description, inputSchema: def.input }, async (args: unknown) => {
      if (!permissions.has(def.permission)) {
        return toolResult(
          {
            error: {
              code: 'forbidden',
              message: `${def.name} needs the ${def.permission} permission, which this credential does not hold`,
            },
          },
          true,
        );
      }
      try {
        return toolResult(await tools.call(def, caller, args));
      } catch (err) {
        if (err instanceof ToolError) return toolResult({ error: { code: err.code, message: err.message } }, true);
        throw err;
      }
    });
  }
  // McpServer advertises tools.listChanged with its first tool; this stateless server never sends that
  // notification (no session outlives its request), so it says so: a client must not wait for one.
  server.server.registerCapabilities({ tools: { listChanged: false } });
  return server;
}

/** A JSON-RPC error response (its `error` object) with this HTTP status, for a request the transport never sees. */
function jsonRpcError(reply: FastifyReply, status: number, error: { code: number; message: string }, headers: Record<string, string> = {}) {
  return reply.code(status).headers(headers).type('application/json').send({ jsonrpc: '2.0', error, id: null });
}

/** How a client of the MCP endpoint learns to authenticate (RFC 9728): the platform's issuer and the scopes the tools need. */
export interface ProtectedResourceOptions {
  publicBaseUrl: string;
  /** The issuer whose token endpoint gives the access tokens the endpoint takes (docs/identity.md). */
  issuer: string;
}

const MCP_SCOPES = ['skills:read', 'agents:write'];

export const skillsMcpRoutes: FastifyPluginAsyncTypebox<{
  agents: AgentsService;
  tools: SkillTools;
  protectedResource: ProtectedResourceOptions;
}> = async (app, { agents, tools, protectedResource }) => {
  const url = '/api/v1/agents/:agentId/mcp';
  const params = Type.Object({ agentId: Id });
  const base = { tags: ['skills'], params };
  const { publicBaseUrl, issuer } = protectedResource;
  // RFC 9728 section 3: the metadata of the resource https://host/p lives at https://host/.well-known/oauth-protected-resource/p.
  // The id as a URL's path segment: an id of any characters (a client's typo, a fuzzer) still makes a
  // valid URL, and a valid header (a raw non-ASCII character made Node refuse the 401's header: a 500).
  const resourcePath = (agentId: string) => `/api/v1/agents/${encodeURIComponent(agentId)}/mcp`;
  const metadataUrl = (agentId: string) => `${publicBaseUrl}/.well-known/oauth-protected-resource${resourcePath(agentId)}`;

  // A 401 names where the client finds how to authenticate (RFC 9728 section 5.1), as MCP clients expect.
  app.addHook('onSend', (req, reply, payload, done) => {
    const agentId = (req.params as { agentId?: string } | undefined)?.agentId;
    if (reply.statusCode === 401 && agentId && req.routeOptions.url === url) {
      reply.header('www-authenticate', `Bearer resource_metadata="${metadataUrl(agentId)}", scope="${MCP_SCOPES[0]}"`);
    }
    done(null, payload);
  });

  app.get(
    '/.well-known/oauth-protected-resource/api/v1/agents/:agentId/mcp',
    {
      config: { public: true },
      schema: {
        operationId: 'getAgentMcpResourceMetadata',
        ...base,
        summary: 'OAuth protected resource metadata (RFC 9728) of an agent’s MCP endpoint: which authorization server issues its tokens',
        description:
          'The same for every agent id (nothing is looked up): the resource, the platform as its authorization server (GET /.well-known/oauth-authorization-server), the scopes its tools need (skills:read; agents:write for skill_request and connector_request), and the Authorization header as the way to send the token.',
        response: {
          200: Type.Object({
            resource: Type.String(),
            authorization_servers: Type.Array(Type.String()),
            scopes_supported: Type.Array(Type.String()),
            bearer_methods_supported: Type.Array(Type.String()),
            resource_name: Type.String(),
            resource_documentation: Type.String(),
          }),
          ...problems(400),
        },
      },
    },
    async (req, reply) => {
      reply.header('cache-control', 'public, max-age=3600');
      return {
        resource: `${publicBaseUrl}${resourcePath(req.params.agentId)}`,
        authorization_servers: [issuer],
        scopes_supported: MCP_SCOPES,
        bearer_methods_supported: ['header'],
        resource_name: 'Agentry agent MCP endpoint (skills and connectors)',
        resource_documentation: `${publicBaseUrl}/docs`,
      };
    },
  );

  app.post(
    url,
    {
      config: { permission: 'skills:read', agentScope: { param: 'agentId' } },
      schema: {
        operationId: 'callAgentMcp',
        ...base,
        summary: 'MCP (Streamable HTTP, stateless): the agent’s skill and connector tools',
        description:
          'JSON-RPC messages of the Model Context Protocol: initialize, tools/list, tools/call. The tools are those the agent gets during runs: skill_discover, skill_query, skill_request (builtin group skills) and connector_discover, connector_request (builtin group connectors). Each tool needs what its HTTP twin needs: skill_request and connector_request create approval tasks, so they need agents:write (as POST /api/v1/tasks); without it they answer an error result with code forbidden and create nothing.',
        body: Type.Unknown({ description: 'a JSON-RPC message or batch' }),
        response: {
          200: Type.Unknown({ description: 'JSON-RPC response' }),
          202: Type.Null({ description: 'accepted (notifications)' }),
          ...problems(401, 403, 404, 413, 415),
        },
      },
    },
    async (req, reply) => {
      const agent = await agents.get(req.principal.tenantId, req.params.agentId);
      if (req.body === undefined || req.body === null)
        return jsonRpcError(reply, 400, { code: -32700, message: 'Parse error: send a JSON-RPC message' });
      const server = buildMcpServer(
        tools,
        { tenantId: req.principal.tenantId, agent, actor: req.principal.actor },
        req.principal.permissions,
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      reply.hijack();
      reply.raw.setHeader('x-request-id', req.id);
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(req.raw, reply.raw, req.body);
      } catch (err) {
        req.log.error({ err }, 'MCP request failed');
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json' });
          reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }));
        }
      }
    },
  );

  for (const [method, operationId] of [
    ['GET', 'openAgentMcpStream'],
    ['DELETE', 'endAgentMcpSession'],
  ] as const) {
    app.route({
      method,
      url,
      config: { permission: 'skills:read', agentScope: { param: 'agentId' } },
      schema: {
        operationId,
        ...base,
        summary: `MCP ${method}: not offered by this stateless server (405)`,
        response: { 405: Type.Unknown({ description: 'JSON-RPC error' }), ...problems(401, 403) },
      },
      handler: async (_req, reply) =>
        jsonRpcError(
          reply,
          405,
          { code: -32000, message: 'Method not allowed: this MCP server is stateless; send JSON-RPC messages with POST' },
          { allow: 'POST' },
        ),
    });
  }
};
