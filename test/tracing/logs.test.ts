import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, createLogger, createServices, type Services } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { type Db, migrate, openDatabase } from '../../src/db/database.js';
import { Tracing } from '../../src/tracing/tracing.js';
import { createTestDatabase, type TestDatabase } from '../helpers/app.js';
import { one, type Receiver, startReceiver } from './receiver.js';

/**
 * Log lines written for a traced request or run carry its span's ids, with tracing as it ships: no
 * context manager following the awaits (that comes only with OTEL_AGENTRY_DB_SPANS, content-logs-db.test.ts).
 * The app is put together as main.ts does, its logger writing here.
 */

let receiver: Receiver;
let database: TestDatabase;
let db: Db;
let app: FastifyInstance;
let services: Services;
let key: string;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  receiver = await startReceiver();
  database = await createTestDatabase();
  const config = loadConfig({
    ...database.env,
    LOG_LEVEL: 'info',
    PUBLIC_BASE_URL: 'http://agentry.test',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
    // A provider nobody listens for: the run fails, and says so in the log.
    OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1',
    MODEL_RETRY_MAX_ATTEMPTS: '1',
  });
  const tracing = Tracing.create(config.tracing)!;
  db = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  await migrate(db);
  const logger = createLogger(config, { write: (line: string) => void lines.push(JSON.parse(line)) });
  services = createServices(config, db, { logger, tracing });
  app = await buildApp({ config, db, services });
  await app.ready();
  ({ apiKey: key } = await services.tenancy.createTenant('logs'));
});
afterAll(async () => {
  await app?.close();
  await db?.close();
  await database?.drop();
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

describe('log lines of traced work', () => {
  it('runs with no context manager in the process (an app with OTEL_AGENTRY_DB_SPANS releases its own when closed)', () => {
    const span = trace.wrapSpanContext({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 });
    expect(context.with(trace.setSpan(ROOT_CONTEXT, span), () => context.active())).toBe(ROOT_CONTEXT);
  });

  it('writes trace_id and span_id on the lines of a traced request and of a run', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const res = await call('GET', '/api/v1/agents', undefined, { traceparent: `00-${traceId}-b7ad6b7169203331-01` });
    const { server } = await traceOf(res.requestId);
    const completed = lines.find((l) => l.reqId === res.requestId && l.msg === 'request completed');
    expect(completed).toMatchObject({ trace_id: traceId, span_id: server.spanId });

    // A line the run writes (its provider unreachable) carries the run's span.
    const agent = await call('POST', '/api/v1/agents', { name: 'Unreachable', appId: 'app', model: 'openai-compatible/some-model' });
    expect(agent.status).toBe(201);
    const run = await call('POST', `/api/v1/agents/${agent.body.id}/execute`, { message: 'hello' });
    expect(run.status).toBe(502);
    const { spans } = await traceOf(run.requestId);
    const runSpan = one(spans, 'invoke_agent Unreachable');
    expect(runSpan.status).toBe(2);
    const warned = lines.find(
      (l) => l.runId === runSpan.attributes['agentry.run.id'] && l.msg === 'the model provider could not be reached',
    );
    expect(warned).toMatchObject({ trace_id: runSpan.traceId, span_id: runSpan.spanId });
    // Lines outside any span carry none.
    expect(lines.find((l) => l.msg === 'incoming request' && l.reqId === res.requestId)).not.toHaveProperty('trace_id');
  });
});
