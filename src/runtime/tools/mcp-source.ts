import { Type, type Static } from 'typebox';

/** A header value in clear, at most; sealed (identity/secret-box.ts: base64url plus its IV and tag) it grows by a third. */
export const MCP_HEADER_MAX_CHARS = 8192;
const MCP_HEADER_SEALED_MAX_CHARS = 11_008;

/** Whom an MCP server's header values are sealed for: the tenant and the server URL's origin (not replayed elsewhere). */
export const mcpHeaderOwner = (tenantId: string, url: string) => `${tenantId}/mcp-header/${new URL(url).origin}`;

/**
 * An MCP server as a tool source of an agent (an entry of its `tools`). The runtime connects to it
 * (mcp.ts); the agents domain accepts and stores it as one kind of its tool specs.
 */
export const McpTool = Type.Object(
  {
    type: Type.Literal('mcp'),
    url: Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048, description: 'Streamable HTTP MCP endpoint' }),
    headers: Type.Optional(
      Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: MCP_HEADER_SEALED_MAX_CHARS }), {
        description: `sent with every request to the server; values are sealed at rest and read back sealed (a value in clear holds at most ${MCP_HEADER_MAX_CHARS} characters; a sealed one sent back is kept)`,
      }),
    ),
    name: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9_-]{1,32}$', description: 'prefix for the server tool names' })),
    allowedTools: Type.Optional(Type.Array(Type.String({ maxLength: 128 }), { maxItems: 256 })),
  },
  { additionalProperties: false, title: 'MCP server tool source' },
);
export type McpSource = Static<typeof McpTool>;
