#!/usr/bin/env node
// A small MCP server (Streamable HTTP, stateless) for trying agent tools locally:
//   node scripts/demo-mcp-server.mjs [port]     (default 3001; endpoint http://127.0.0.1:<port>/mcp)
// Tools: add {a, b} -> {sum}; utc_time {} -> {now}; word_count {text} -> {words}.
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const port = Number(process.argv[2] ?? 3001);

function build() {
  const server = new McpServer({ name: 'agentry-demo-tools', version: '1.0.0' });
  server.registerTool('add', { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
    structuredContent: { sum: a + b },
  }));
  server.registerTool('utc_time', { description: 'The current UTC time', inputSchema: {} }, async () => {
    const now = new Date().toISOString();
    return { content: [{ type: 'text', text: now }], structuredContent: { now } };
  });
  server.registerTool('word_count', { description: 'Counts the words of a text', inputSchema: { text: z.string() } }, async ({ text }) => {
    const words = text.split(/\s+/).filter(Boolean).length;
    return { content: [{ type: 'text', text: String(words) }], structuredContent: { words } };
  });
  return server;
}

http
  .createServer(async (req, res) => {
    if (!req.url?.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    let body = '';
    for await (const chunk of req) body += chunk;
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  })
  .listen(port, '127.0.0.1', () => console.log(`demo MCP server on http://127.0.0.1:${port}/mcp`));
