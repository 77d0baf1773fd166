import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialect } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { startTracedApp, type TracedApp } from './main-app.js';
import { childrenOf, one, type Receiver, startReceiver } from './receiver.js';

/**
 * What the settings change: prompt and completion text recorded with OTEL_GENAI_CAPTURE_CONTENT=true,
 * database statements as spans with OTEL_AGENTRY_DB_SPANS=true. The app is put together as main.ts does
 * (main-app.ts). Log lines carrying span ids: logs.test.ts.
 */

let receiver: Receiver;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
let t: TracedApp;

beforeAll(async () => {
  receiver = await startReceiver();
  mcp = await startMcpServer();
  t = await startTracedApp(receiver, {
    MCP_ALLOWED_HOSTS: '127.0.0.1',
    OTEL_GENAI_CAPTURE_CONTENT: 'true',
    OTEL_AGENTRY_DB_SPANS: 'true',
  });
});
afterAll(async () => {
  await t?.close();
  await mcp?.close();
  await receiver?.close();
});

const call = (...args: Parameters<TracedApp['call']>) => t.call(...args);
const traceOf = (requestId: unknown) => t.traceOf(requestId);

describe('trace settings', () => {
  it('records prompt, completion and tool-call text with OTEL_GENAI_CAPTURE_CONTENT=true', async () => {
    const agent = await call('POST', '/api/v1/agents', { name: 'Talker', appId: 'app', tools: [{ type: 'mcp', url: mcp.url }] });
    expect(agent.status).toBe(201);
    const res = await call('POST', `/api/v1/agents/${agent.body.id}/execute`, { message: 'add them\n/tool add {"a":2,"b":3}' });
    expect(res.status).toBe(200);
    const { spans } = await traceOf(res.requestId);
    const [first, second] = spans.filter((s) => s.name === 'chat echo');
    const input = JSON.parse(first.attributes['gen_ai.input.messages'] as string);
    expect(input).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'add them\n/tool add {"a":2,"b":3}' }] }]);
    const output = JSON.parse(first.attributes['gen_ai.output.messages'] as string);
    expect(output).toEqual([{ role: 'assistant', parts: expect.any(Array), finish_reason: 'tool_calls' }]);
    expect(output[0].parts).toContainEqual({ type: 'tool_call', id: expect.any(String), name: 'add', arguments: '{"a":2,"b":3}' });
    // The second step was given the tool's result.
    expect(second.attributes['gen_ai.input.messages']).toContain('tool_call_response');
    const tool = one(spans, 'execute_tool add');
    expect(JSON.parse(tool.attributes['gen_ai.tool.call.arguments'] as string)).toEqual({ a: 2, b: 3 });
    expect(JSON.parse(tool.attributes['gen_ai.tool.call.result'] as string)).toEqual({ sum: 5 });
  });

  it('holds captured content to 64 KiB an attribute', async () => {
    const agent = await call('POST', '/api/v1/agents', { name: 'Shouter', appId: 'app', tools: [{ type: 'mcp', url: mcp.url }] });
    const text = 'a'.repeat(70_000);
    const res = await call('POST', `/api/v1/agents/${agent.body.id}/execute`, { message: `/tool shout {"text":"${text}"}` });
    expect(res.status).toBe(200);
    const { spans } = await traceOf(res.requestId);
    const tool = one(spans, 'execute_tool shout');
    const result = tool.attributes['gen_ai.tool.call.result'] as string;
    expect(result.length).toBe(64 * 1024 + '…[truncated]'.length);
    expect(result.endsWith('…[truncated]')).toBe(true);
    expect(result).toContain('AAAA');
  });

  it('puts each database statement in a span under what ran it with OTEL_AGENTRY_DB_SPANS=true', async () => {
    const res = await call('GET', '/api/v1/agents?limit=5');
    expect(res.status).toBe(200);
    const { server, spans } = await traceOf(res.requestId);
    const statements = childrenOf(spans, server).filter((s) => s.attributes['db.query.text'] !== undefined);
    expect(statements.length).toBeGreaterThan(0);
    const select = statements.find((s) => /from "agents"/.test(String(s.attributes['db.query.text'])));
    expect(select).toMatchObject({
      name: 'SELECT',
      kind: 3,
      attributes: expect.objectContaining({
        'db.system.name': dialect === 'postgres' ? 'postgresql' : 'sqlite',
        'db.operation.name': 'SELECT',
      }),
    });
  });

  it('runs no statement on tool approvals at the end of a run that never waited for one', async () => {
    const agent = await call('POST', '/api/v1/agents', { name: 'Plain', appId: 'app' });
    expect(agent.status).toBe(201);
    const res = await call('POST', `/api/v1/agents/${agent.body.id}/execute`, { message: 'hello' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    const { spans } = await traceOf(res.requestId);
    const texts = spans.map((s) => String(s.attributes['db.query.text'] ?? '')).filter(Boolean);
    // The run's own end is traced (its UPDATE of runs), and nothing touches tool_approvals.
    expect(texts.some((t) => /update "runs"/.test(t))).toBe(true);
    expect(texts.filter((t) => t.includes('tool_approvals'))).toEqual([]);
  });
});
