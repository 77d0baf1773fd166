#!/usr/bin/env node
// An MCP client, as an agent hosted elsewhere would use the platform's skills: lists the tools of an
// agent's MCP endpoint, or calls one and prints its result.
//
//   AGENTRY_KEY=agk_... node scripts/mcp-client.mjs <agentId>                      list the tools
//   AGENTRY_KEY=agk_... node scripts/mcp-client.mjs <agentId> <tool> '<json args>'  call one
//
// AGENTRY_URL is the server's address (default http://127.0.0.1:8080, as `npm start` serves); the key
// needs the skills:read permission.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [agentId, tool, args = '{}'] = process.argv.slice(2);
const key = process.env.AGENTRY_KEY;
if (!agentId || !key) {
  process.stderr.write('usage: AGENTRY_KEY=agk_... node scripts/mcp-client.mjs <agentId> [tool] [json-arguments]\n');
  process.exit(2);
}
const base = (process.env.AGENTRY_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');

const client = new Client({ name: 'agentry-example-client', version: '1.0.0' });
const endpoint = `${base}/api/v1/agents/${agentId}/mcp`;
const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
  requestInit: { headers: { authorization: `Bearer ${key}` } },
});
try {
  await client.connect(transport);
  if (!tool) {
    const { tools } = await client.listTools();
    for (const t of tools) {
      const params = Object.keys(t.inputSchema.properties ?? {}).join(', ');
      process.stdout.write(`${t.name}(${params})\n  ${t.description}\n`);
    }
  } else {
    const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
    process.stdout.write(`${JSON.stringify(result.structuredContent ?? result.content, null, 2)}\n`);
    if (result.isError) process.exitCode = 1;
  }
} catch (err) {
  process.stderr.write(`mcp-client: ${explain(err)}\n`);
  process.exitCode = 1;
} finally {
  await client.close();
}

/** A failure that names the URL tried: "fetch failed" alone does not say that AGENTRY_URL is wrong. */
function explain(err) {
  const message = err instanceof Error ? err.message : String(err);
  const reason = /** @type {{ code?: string, message?: string } | undefined} */ (err instanceof Error ? err.cause : undefined);
  const cause = reason ? (reason.code ?? reason.message) : null;
  if (message === 'fetch failed' || cause) {
    return `could not reach ${endpoint}${cause ? ` (${cause})` : ''}: is the server running there? AGENTRY_URL sets its address.`;
  }
  return `${endpoint}: ${message}`;
}
