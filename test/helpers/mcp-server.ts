import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const NESTED = '@nested:';

/** `depth` levels of JSON: arrays around the string "bottom". */
const nestedText = (depth: number) => `${'['.repeat(depth - 1)}"bottom"${']'.repeat(depth - 1)}`;

/** The response's text chunks with each `"@nested:<depth>"` string replaced by that many levels of nesting. */
function nestedInto(res: http.ServerResponse) {
  const replace = (chunk: unknown) => {
    const text = typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : undefined;
    if (text === undefined || !text.includes(NESTED)) return chunk;
    return text.replace(/"@nested:(\d+)"/g, (_, depth: string) => nestedText(Number(depth)));
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => http.ServerResponse;
  res.write = ((chunk: unknown, ...rest: unknown[]) => write(replace(chunk), ...rest)) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => end(replace(chunk), ...rest)) as typeof res.end;
}

/**
 * A real MCP server (MCP SDK, Streamable HTTP, stateless) with a few tools for runtime tests;
 * `hostile` adds tools whose results are past the run's JSON bounds (deep-nesting tests only, so the
 * other tests' tool lists stay as they are).
 */
export async function startMcpServer(options: { hostile?: boolean } = {}) {
  // calls: what the tools' handlers ran; rpc: every JSON-RPC method that reached the server (checked or
  // not); callMeta: each tools/call's `params._meta` (null without one).
  const state = {
    calls: [] as { name: string; args: unknown }[],
    rpc: [] as string[],
    callMeta: [] as unknown[],
    aborted: 0,
    headers: [] as http.IncomingHttpHeaders[],
  };

  function build() {
    const server = new McpServer({ name: 'test-tools', version: '1.0.0' });
    server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => {
      state.calls.push({ name: 'add', args: { a, b } });
      return { content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } };
    });
    server.registerTool('shout', { description: 'Upper-cases text', inputSchema: { text: z.string() } }, async ({ text }) => {
      state.calls.push({ name: 'shout', args: { text } });
      return { content: [{ type: 'text', text: text.toUpperCase() }] };
    });
    server.registerTool('slow', { description: 'Waits ms milliseconds', inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
      state.calls.push({ name: 'slow', args: { ms } });
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms);
        extra.signal.addEventListener('abort', () => {
          state.aborted++;
          clearTimeout(t);
          resolve();
        });
      });
      return { content: [{ type: 'text', text: `waited ${ms}` }] };
    });
    if (options.hostile) registerHostileTools(server, state);
    server.registerTool('broken', { description: 'Always fails', inputSchema: {} }, async () => {
      state.calls.push({ name: 'broken', args: {} });
      return { isError: true, content: [{ type: 'text', text: 'the broken tool is broken' }] };
    });
    return server;
  }

  const httpServer = http.createServer(async (req, res) => {
    state.headers.push(req.headers);
    nestedInto(res);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    for (const message of [body].flat()) {
      if (message?.method) state.rpc.push(message.method);
      if (message?.method === 'tools/call') state.callMeta.push(message.params?._meta ?? null);
    }
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    state,
    close: () =>
      new Promise<void>((r) => {
        httpServer.closeAllConnections();
        httpServer.close(() => r());
      }),
  };
}

/** Results past the run's JSON bounds (src/json-bounds.ts): structuredContent nested `depth` levels, or `chars` of text. */
function registerHostileTools(server: McpServer, state: { calls: { name: string; args: unknown }[] }) {
  // The SDK's own serialisation overflows the stack on thousands of levels, so the nested value is
  // written into the response's text as it leaves (`nestedInto`).
  server.registerTool(
    'nested',
    { description: 'Answers a value nested depth levels', inputSchema: { depth: z.number() } },
    async ({ depth }) => {
      state.calls.push({ name: 'nested', args: { depth } });
      return { content: [{ type: 'text', text: 'nested' }], structuredContent: { value: `${NESTED}${depth}` } };
    },
  );
  server.registerTool(
    'bulky',
    { description: 'Answers chars characters of text', inputSchema: { chars: z.number() } },
    async ({ chars }) => {
      state.calls.push({ name: 'bulky', args: { chars } });
      return { content: [{ type: 'text', text: 'x'.repeat(chars) }] };
    },
  );
}
