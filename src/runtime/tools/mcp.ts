import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { traceparentOf } from '../trace-context.js';
import { type McpSource, mcpHeaderOwner } from './mcp-source.js';
import { OutboundRefused } from './ssrf.js';
import { type OutboundFetch, ToolError, type RuntimeTool, type ToolContext, type ToolProvider, type ToolSet } from './types.js';

const MAX_TOOLS_PER_SERVER = 256;

/** Text of an MCP tool result's content blocks, for errors and plain results. */
function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((c: { type?: string; text?: string }) => (c?.type === 'text' && typeof c.text === 'string' ? c.text : ''))
    .filter(Boolean)
    .join('\n');
}

/** Opens header values the agents service sealed at rest; null when a value does not open for its owner. */
export interface HeaderOpener {
  isSealed(value: string): boolean;
  open(sealed: string, owner: string): string | null;
}

/** How the provider reaches MCP servers: through `fetch`, with the header values `opener` opens. */
interface McpOutbound {
  fetch: OutboundFetch;
  opener: HeaderOpener;
}

/** The headers to send: sealed values opened for this tenant and server; one that does not open fails the connection. */
function headersOf(source: McpSource, tenantId: string, opener: HeaderOpener): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(source.headers ?? {})) {
    if (!opener.isSealed(value)) headers[name] = value;
    else {
      const plain = opener.open(value, mcpHeaderOwner(tenantId, source.url));
      if (plain === null) throw new Error(`header ${name} was sealed for another server URL origin or master key; set it again`);
      headers[name] = plain;
    }
  }
  return headers;
}

/** The `params._meta.traceparent` a JSON-RPC request names (a tool call's). */
function parentNamedIn(init: RequestInit | undefined): string | undefined {
  const body = init?.body;
  if (typeof body !== 'string' || !body.includes('"traceparent"')) return undefined;
  try {
    const named = (JSON.parse(body) as { params?: { _meta?: { traceparent?: unknown } } } | null)?.params?._meta?.traceparent;
    return typeof named === 'string' ? named : undefined;
  } catch {
    return undefined;
  }
}

async function connect(
  source: McpSource,
  headers: Record<string, string>,
  { signal, trace: run }: Pick<ToolContext, 'signal' | 'trace'>,
  fetch: OutboundFetch,
): Promise<{ client: Client; tools: RuntimeTool[] }> {
  const client = new Client({ name: 'agentry', version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(source.url), {
    requestInit: { headers },
    // Traced, a request is a span under the tool call it makes (named in its `_meta`), else under the run.
    fetch: run ? (input, init) => fetch(input, init, parentNamedIn(init) ?? run) : fetch,
  });
  await client.connect(transport, { signal });
  const listed: { name: string; description?: string; inputSchema: Record<string, unknown> }[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {}, { signal });
    listed.push(...(page.tools as typeof listed));
    cursor = page.nextCursor;
  } while (cursor && listed.length < MAX_TOOLS_PER_SERVER);

  const allowed = source.allowedTools ? new Set(source.allowedTools) : null;
  const tools = listed
    .filter((t) => !allowed || allowed.has(t.name))
    .slice(0, MAX_TOOLS_PER_SERVER)
    .map<RuntimeTool>((t) => ({
      name: source.name ? `${source.name}_${t.name}` : t.name,
      description: t.description ?? `${t.name} (MCP server ${new URL(source.url).host})`,
      inputSchema: t.inputSchema ?? { type: 'object' },
      async execute(input, ctx) {
        // Named in `_meta` too (OpenTelemetry's conventions for MCP): the server reads it, and so does `fetch` above.
        const traceparent = traceparentOf(ctx.trace);
        const result = await client.callTool(
          { name: t.name, arguments: (input ?? {}) as Record<string, unknown>, ...(traceparent ? { _meta: { traceparent } } : {}) },
          undefined,
          { signal: ctx.signal },
        );
        if (result.isError) throw new ToolError('tool_failed', contentText(result.content) || `${t.name} failed`);
        if (result.structuredContent && typeof result.structuredContent === 'object') return result.structuredContent;
        const text = contentText(result.content);
        return { content: result.content, ...(text ? { text } : {}) };
      },
    }));
  return { client, tools };
}

/**
 * Tools from the MCP servers named in an agent's `tools` (`{ type: "mcp", url, headers?, name?,
 * allowedTools? }`), over Streamable HTTP with the MCP SDK client: one connection per server per run.
 * Every request goes through `fetch`: the platform gives the outbound guard's (runtime/tools/ssrf.ts).
 */
export function mcpToolProvider(fetch: OutboundFetch, opener: HeaderOpener): ToolProvider {
  const outbound: McpOutbound = { fetch, opener };
  return async (ctx) => {
    const sources = ctx.agent.tools.filter((t): t is McpSource => t.type === 'mcp');
    return sources.length ? connectAll(sources, ctx, outbound) : { tools: [] };
  };
}

/** Why a connection failed, for the run's warnings: the guard's refusal, or the innermost network error. */
function failure(err: unknown): string {
  const chain: Error[] = [];
  for (let e = err; e instanceof Error && chain.length < 8; e = e.cause) chain.push(e);
  const refused = chain.find((e) => e instanceof OutboundRefused);
  if (refused) return `refused: ${refused.message}`;
  const inner = chain[chain.length - 1];
  return inner && inner !== chain[0] ? `${chain[0].message}: ${inner.message}` : String((err as Error)?.message ?? err);
}

/** Tools from each MCP server, over a connection per server kept for the run (`close` ends them). */
async function connectAll(
  sources: McpSource[],
  { tenantId, signal, trace: run }: Pick<ToolContext, 'tenantId' | 'signal' | 'trace'>,
  { fetch, opener }: McpOutbound,
): Promise<ToolSet> {
  const clients: Client[] = [];
  const tools: RuntimeTool[] = [];
  const errors: string[] = [];
  await Promise.all(
    sources.map(async (source) => {
      try {
        const c = await connect(source, headersOf(source, tenantId, opener), { signal, trace: run }, fetch);
        clients.push(c.client);
        tools.push(...c.tools);
      } catch (err) {
        errors.push(`${source.url}: ${failure(err)}`);
      }
    }),
  );
  return {
    tools,
    warnings: errors.map((e) => `MCP server unavailable: ${e}`),
    close: async () => void (await Promise.allSettled(clients.map((c) => c.close()))),
  };
}
