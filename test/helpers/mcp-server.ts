import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** A real MCP server (MCP SDK, Streamable HTTP, stateless) with a few tools for runtime tests. */
export async function startMcpServer() {
  // calls: what the tools' handlers ran; rpc: every JSON-RPC method that reached the server (checked or not).
  const state = {
    calls: [] as { name: string; args: unknown }[],
    rpc: [] as string[],
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
    server.registerTool('broken', { description: 'Always fails', inputSchema: {} }, async () => {
      state.calls.push({ name: 'broken', args: {} });
      return { isError: true, content: [{ type: 'text', text: 'the broken tool is broken' }] };
    });
    return server;
  }

  const httpServer = http.createServer(async (req, res) => {
    state.headers.push(req.headers);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    for (const message of [body].flat()) if (message?.method) state.rpc.push(message.method);
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
