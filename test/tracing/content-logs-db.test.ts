import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, createLogger, createServices, type Services } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { type Db, migrate, openDatabase } from '../../src/db/database.js';
import { dbStatementLog } from '../../src/tracing/db.js';
import { Tracing } from '../../src/tracing/tracing.js';
import { createTestDatabase, dialect, type TestDatabase } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { childrenOf, one, type Receiver, startReceiver } from './receiver.js';

/**
 * What the settings change: prompt and completion text recorded with OTEL_GENAI_CAPTURE_CONTENT=true,
 * database statements as spans with OTEL_AGENTRY_DB_SPANS=true. The app is put together as main.ts does
 * (tracing first, the database reporting to it). Log lines carrying span ids: logs.test.ts.
 */

let receiver: Receiver;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
let database: TestDatabase;
let db: Db;
let app: FastifyInstance;
let services: Services;
let key: string;

beforeAll(async () => {
  receiver = await startReceiver();
  mcp = await startMcpServer();
  database = await createTestDatabase();
  const config = loadConfig({
    ...database.env,
    LOG_LEVEL: 'info',
    PUBLIC_BASE_URL: 'http://agentry.test',
    MCP_ALLOWED_HOSTS: '127.0.0.1',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
    OTEL_GENAI_CAPTURE_CONTENT: 'true',
    OTEL_AGENTRY_DB_SPANS: 'true',
  });
  const tracing = Tracing.create(config.tracing)!;
  db = openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    onQuery: dbStatementLog(tracing, dialect === 'postgres' ? 'postgresql' : 'sqlite'),
  });
  await migrate(db);
  // Its lines are not what this file reads (logs.test.ts does).
  const logger = createLogger(config, { write: () => {} });
  services = createServices(config, db, { logger, tracing });
  app = await buildApp({ config, db, services });
  await app.ready();
  ({ apiKey: key } = await services.tenancy.createTenant('content'));
});
afterAll(async () => {
  await app?.close();
  await db?.close();
  await database?.drop();
  await mcp?.close();
  await receiver?.close();
});

async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: method as 'GET',
    url,
    headers: { authorization: `Bearer ${key}`, ...headers },
    payload: body as object,
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined, requestId: res.headers['x-request-id'] };
}

async function traceOf(requestId: unknown) {
  await services.tracing!.flush();
  const server = receiver.spans.find((s) => s.attributes['agentry.request.id'] === requestId);
  if (!server) throw new Error(`no span of request ${requestId}`);
  return { server, spans: receiver.trace(server.traceId) };
}

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
