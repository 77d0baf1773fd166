import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute as executeAgent } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse } from '../helpers/sse.js';

/**
 * Every tool call's input is checked against the tool's JSON Schema before the tool runs, whatever
 * kind of tool it is (MCP, delegation, the built-in skill tools): a call that does not match never
 * reaches the tool, is recorded as `invalid_tool_call`, and the model is told which field is wrong.
 * Driven with builtin/echo's `/tool <name> <json>` directive, which calls a tool with exactly that input.
 */

let t: TestApp;
let key: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('tool-input'));
  mcp = await startMcpServer();
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await mcp?.close();
});
const execute = async (agentId: string, message: string) => {
  const res = await executeAgent(t.api(key), agentId, { message });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.run!;
};
const runsOf = async (agentId: string) =>
  (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } })).data!.total;
const getRun = async (runId: string) => (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!;
const invalid = (message: string) => ({ error: { code: 'invalid_tool_call', message } });

describe('delegation tool input', () => {
  it('never starts the callee when the model omits message, gives the wrong type or an unknown field', async () => {
    const helper = await t.agent(key, { name: 'Helper' });
    const lead = await t.agent(key, { name: 'Lead', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_helper' }] });

    const omitted = await execute(lead.id, '/tool ask_helper {}');
    expect(omitted.status).toBe('completed');
    expect(omitted.toolCalls).toEqual([
      { name: 'ask_helper', input: {}, result: invalid('Invalid input for tool ask_helper: message is required') },
    ]);
    // The model is told in words what was wrong (builtin/echo answers with the result it was given).
    expect(omitted.output).toBe('ask_helper returned "Invalid input for tool ask_helper: message is required"');

    const wrongType = await execute(lead.id, '/tool ask_helper {"message":42}');
    expect(wrongType.toolCalls[0].result).toEqual(invalid('Invalid input for tool ask_helper: message must be string (got number)'));

    const unknownField = await execute(lead.id, '/tool ask_helper {"message":"hi","urgent":true}');
    expect(unknownField.toolCalls[0].result).toEqual(
      invalid('Invalid input for tool ask_helper: urgent is not an allowed field (allowed: message)'),
    );

    const empty = await execute(lead.id, '/tool ask_helper {"message":""}');
    expect(empty.toolCalls[0].result).toEqual(invalid('Invalid input for tool ask_helper: message must NOT have fewer than 1 characters'));

    expect(await runsOf(helper.id)).toBe(0);

    // A valid call still reaches the callee, with the text the model gave.
    const valid = await execute(lead.id, '/tool ask_helper {"message":"find the answer"}');
    expect(valid.toolCalls[0].result).toMatchObject({ output: 'find the answer', agentId: helper.id });
    expect(await runsOf(helper.id)).toBe(1);
  });
});

describe('MCP tool input', () => {
  it('does not send arguments of the wrong type to the MCP server; a valid call still goes', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const before = mcp.state.calls.length;
    const rpcBefore = mcp.state.rpc.length;
    const res = await execute(a.id, '/tool add {"a":"two"}');
    expect(res.toolCalls).toEqual([
      { name: 'add', input: { a: 'two' }, result: invalid('Invalid input for tool add: b is required; a must be number (got string)') },
    ]);
    // The run listed the server's tools, and called none of them.
    expect(mcp.state.rpc.slice(rpcBefore)).toContain('tools/list');
    expect(mcp.state.rpc.slice(rpcBefore)).not.toContain('tools/call');
    expect(mcp.state.calls.length).toBe(before);

    const ok = await execute(a.id, '/tool add {"a":2,"b":3}');
    expect(ok.toolCalls[0].result).toEqual({ sum: 5 });
    expect(mcp.state.calls.slice(before)).toEqual([{ name: 'add', args: { a: 2, b: 3 } }]);
  });

  it('checks every call of a step on its own: the valid one runs, the invalid one is refused', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url, name: 'ext' }] });
    const before = mcp.state.calls.length;
    const rpcBefore = mcp.state.rpc.length;
    const res = await execute(a.id, '/tool ext_shout {"text":["not","a","string"]}\n/tool ext_shout {"text":"hey"}');
    expect(res.toolCalls.map((c: { result: unknown }) => c.result)).toEqual([
      invalid('Invalid input for tool ext_shout: text must be string (got array)'),
      expect.objectContaining({ text: 'HEY' }),
    ]);
    expect(mcp.state.rpc.slice(rpcBefore).filter((m) => m === 'tools/call')).toHaveLength(1);
    expect(mcp.state.calls.slice(before)).toEqual([{ name: 'shout', args: { text: 'hey' } }]);
  });

  it('shows the refused call as an error in the streamed events and in the run record', async () => {
    const a = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }] });
    const rpcBefore = mcp.state.rpc.length;
    const events = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: '/tool add {"a":1,"b":"2"}' } }));
    const result = invalid('Invalid input for tool add: b must be number (got string)');
    const start = events.find((e) => e.event === 'tool_call_start')!;
    expect(start.data).toMatchObject({ name: 'add', input: { a: 1, b: '2' } });
    expect(events.find((e) => e.event === 'tool_call_end')!.data).toEqual({ id: start.data.id, result });
    expect(events.at(-1)!.event).toBe('done');
    expect(mcp.state.rpc.slice(rpcBefore)).not.toContain('tools/call');
    const runId = events.at(-1)!.data.runId;
    expect(await getRun(runId)).toMatchObject({ status: 'completed', toolCalls: [{ name: 'add', input: { a: 1, b: '2' }, result }] });
  });
});

describe('built-in tool input', () => {
  it('checks the skill tools against the schema they announce', async () => {
    const a = await t.agent(key, {
      tools: [
        { type: 'builtin', name: 'skills' },
        { type: 'builtin', name: 'connectors' },
      ],
    });
    const res = await execute(a.id, '/tool skill_query {"query":"prices","referenceFile":7}');
    expect(res.toolCalls[0].result).toEqual(
      invalid('Invalid input for tool skill_query: skillId is required; referenceFile must be string (got number)'),
    );
    const tooLong = await execute(a.id, `/tool connector_discover {"category":"${'x'.repeat(65)}"}`);
    expect(tooLong.toolCalls[0].result).toEqual(
      invalid('Invalid input for tool connector_discover: category must NOT have more than 64 characters'),
    );
    const fine = await execute(a.id, '/tool connector_discover {}');
    expect(fine.toolCalls[0].result).toHaveProperty('available');
  });
});

/**
 * An MCP server that lists tools with hand-written JSON Schemas, as servers not built on zod do
 * (draft-07 `$schema`, `$id`, `definitions`), and answers every call by echoing its arguments.
 */
async function startRawMcpServer(tools: { name: string; inputSchema: Record<string, unknown> }[]) {
  const called: unknown[] = [];
  const httpServer = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const server = new Server({ name: 'raw-tools', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.map((t) => ({ ...t, description: t.name })) }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      called.push(request.params.arguments);
      return { content: [{ type: 'text', text: 'ok' }], structuredContent: { got: request.params.arguments } };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void server.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined);
  });
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`,
    called,
    close: () =>
      new Promise<void>((r) => {
        httpServer.closeAllConnections();
        httpServer.close(() => r());
      }),
  };
}

describe('MCP servers’ own schemas', () => {
  it('checks draft-07 schemas with $id and definitions, and leaves out a tool whose schema cannot be compiled, with a warning', async () => {
    const raw = await startRawMcpServer([
      {
        name: 'order',
        inputSchema: {
          $schema: 'http://json-schema.org/draft-07/schema#',
          $id: 'https://tools.example/order.json',
          type: 'object',
          properties: { items: { type: 'array', items: { $ref: '#/definitions/item' }, minItems: 1 }, express: { type: 'boolean' } },
          required: ['items'],
          definitions: {
            item: {
              type: 'object',
              properties: { sku: { type: 'string', pattern: '^[A-Z]{3}-\\d+$' }, qty: { type: 'integer', minimum: 1 } },
              required: ['sku', 'qty'],
            },
          },
        },
      },
      { name: 'dangling', inputSchema: { type: 'object', properties: { x: { $ref: '#/definitions/missing' } } } },
      // A pattern whose backtracking time grows exponentially runs on the linear-time engine (RE2), so
      // one tenant's MCP server cannot stall everybody's runs; one RE2 cannot run (lookaround) leaves its tool out.
      { name: 'stall', inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } } },
      { name: 'lookahead', inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)a$' } } } },
    ]);
    try {
      const a = await t.agent(key, { tools: [{ type: 'mcp', url: raw.url }] });
      const bad = await execute(a.id, '/tool order {"items":[{"sku":"ABC-1","qty":2},{"sku":"abc","qty":0}],"express":"yes"}');
      expect(bad.toolCalls[0].result).toEqual(
        invalid(
          'Invalid input for tool order: items[1].sku must match pattern "^[A-Z]{3}-\\d+$"; items[1].qty must be >= 1; express must be boolean (got string)',
        ),
      );
      expect(raw.called).toEqual([]);
      const good = await execute(a.id, '/tool order {"items":[{"sku":"ABC-1","qty":2}]}');
      expect(good.toolCalls[0].result).toEqual({ got: { items: [{ sku: 'ABC-1', qty: 2 }] } });
      expect(raw.called).toHaveLength(1);

      // The tools whose schema refers to nothing or holds a pattern RE2 cannot run are not offered to the model; the run says why.
      const dangling = await execute(a.id, `/tool dangling {"x":1}\n/tool lookahead {"s":"a"}\n/tool stall {"s":"${'a'.repeat(40)}!"}`);
      expect(dangling.toolCalls.map((c) => c.result)).toEqual([
        invalid("Model tried to call unavailable tool 'dangling'. Available tools: order, stall."),
        invalid("Model tried to call unavailable tool 'lookahead'. Available tools: order, stall."),
        invalid('Invalid input for tool stall: s must match pattern "^(a+)+$"'),
      ]);
      expect((await getRun(dangling.runId)).warnings).toEqual([
        expect.stringMatching(/^tool dangling left out: its input schema is unusable \(.*missing.*\)$/),
        expect.stringMatching(/^tool lookahead left out: its input schema is unusable \(.*linear-time engine \(RE2\).*\)$/),
      ]);
      expect(raw.called).toHaveLength(1);
    } finally {
      await raw.close();
    }
  });
});
