import type { FastifyInstance } from 'fastify';
import { buildApp, createLogger, createServices, type Services } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { migrate, openDatabase } from '../../src/db/database.js';
import { dbStatementLog } from '../../src/tracing/db.js';
import { Tracing } from '../../src/tracing/tracing.js';
import { createTestDatabase, dialect } from '../helpers/app.js';
import type { Receiver } from './receiver.js';

export interface TracedApp {
  app: FastifyInstance;
  services: Services;
  call: ReturnType<typeof caller>;
  /** Exports what is buffered, then answers the server span of the request `requestId` and its trace. */
  traceOf(requestId: unknown): ReturnType<typeof traceIn>;
  close(): Promise<void>;
}

/** Requests through `app.inject` with the tenant's key: the answer's status, JSON body and request id. */
function caller(app: FastifyInstance, key: string) {
  return async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: { authorization: `Bearer ${key}`, ...headers },
      payload: body as object,
    });
    return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined, requestId: res.headers['x-request-id'] };
  };
}

async function traceIn(services: Services, receiver: Receiver, requestId: unknown) {
  await services.tracing!.flush();
  const server = receiver.spans.find((s) => s.attributes['agentry.request.id'] === requestId);
  if (!server) throw new Error(`no span of request ${requestId}`);
  return { server, spans: receiver.trace(server.traceId) };
}

/**
 * An app put together as main.ts does (tracing first, the database reporting its statements to it with
 * OTEL_AGENTRY_DB_SPANS), exporting to `receiver`, its log lines (at info) handed to `onLine`, with a
 * tenant whose key `call` sends.
 */
export async function startTracedApp(
  receiver: Receiver,
  env: Record<string, string>,
  onLine: (line: Record<string, unknown>) => void = () => {},
): Promise<TracedApp> {
  const database = await createTestDatabase();
  const config = loadConfig({
    ...database.env,
    LOG_LEVEL: 'info',
    PUBLIC_BASE_URL: 'http://agentry.test',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
    ...env,
  });
  const tracing = Tracing.create(config.tracing)!;
  const db = openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    onQuery: config.tracing.dbSpans ? dbStatementLog(tracing, dialect === 'postgres' ? 'postgresql' : 'sqlite') : undefined,
  });
  await migrate(db);
  const logger = createLogger(config, { write: (line: string) => onLine(JSON.parse(line)) });
  const services = createServices(config, db, { logger, tracing });
  const app = await buildApp({ config, db, services });
  await app.ready();
  const { apiKey: key } = await services.tenancy.createTenant('traced');
  return {
    app,
    services,
    call: caller(app, key),
    traceOf: (requestId) => traceIn(services, receiver, requestId),
    async close() {
      await app.close();
      await db.close();
      await database.drop();
    },
  };
}
