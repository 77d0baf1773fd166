import { Type, type Static } from 'typebox';

/**
 * An MCP server as a tool source of an agent (an entry of its `tools`). The runtime connects to it
 * (mcp.ts); the agents domain accepts and stores it as one kind of its tool specs.
 */
export const McpTool = Type.Object(
  {
    type: Type.Literal('mcp'),
    url: Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048, description: 'Streamable HTTP MCP endpoint' }),
    headers: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 8192 }))),
    name: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9_-]{1,32}$', description: 'prefix for the server tool names' })),
    allowedTools: Type.Optional(Type.Array(Type.String({ maxLength: 128 }), { maxItems: 256 })),
  },
  { additionalProperties: false, title: 'MCP server tool source' },
);
export type McpSource = Static<typeof McpTool>;
