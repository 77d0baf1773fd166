import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import pino from 'pino';
import { agentsRoutes } from './agents/routes.js';
import { Agent } from './agents/schemas.js';
import { AgentsService } from './agents/service.js';
import type { Config } from './config.js';
import { ping, type Db } from './db/database.js';
import { registerAuth } from './http/auth.js';
import { ProblemError, registerErrorHandling } from './http/errors.js';
import { registerJsonParser } from './http/json.js';
import { Problem } from './http/schemas.js';
import { registerValidation } from './http/validation.js';
import { newId } from './ids.js';
import { filesRoutes, FilesService } from './conversations/files.js';
import { conversationsRoutes } from './conversations/routes.js';
import { ConversationsService } from './conversations/service.js';
import { runsRoutes } from './runs/routes.js';
import { RunsService } from './runs/service.js';
import { PriceTable } from './runtime/models/prices.js';
import { ModelRegistry } from './runtime/models/registry.js';
import { mcpToolProvider } from './runtime/tools/mcp.js';
import { ToolRegistry } from './runtime/tools/registry.js';
import { createSkillsDomain, skillsDomainRoutes, type SkillsDomain } from './skills/index.js';
import { tenancyRoutes } from './tenancy/routes.js';
import { TenancyService } from './tenancy/service.js';

export const BODY_LIMIT = 1024 * 1024;

export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeCatalog: RouteEntry[];
  }
}

/** The services of every domain, built once per process and shared by routes and background work. */
export interface Services extends SkillsDomain {
  logger: FastifyBaseLogger;
  tenancy: TenancyService;
  agents: AgentsService;
  tools: ToolRegistry;
  runs: RunsService;
  files: FilesService;
  conversations: ConversationsService;
}

/** The process logger: JSON lines; credentials and secrets are redacted whatever a line includes. */
export function createLogger(config: Config): FastifyBaseLogger {
  return pino({
    level: config.logLevel,
    redact: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', '*.apiKey', '*.secret', '*.password', '*.privateKey'],
  });
}

export function createServices(config: Config, db: Db, logger: FastifyBaseLogger = createLogger(config)): Services {
  const agents = new AgentsService(db, config.defaultModel);
  const tools = new ToolRegistry();
  tools.register('mcp', mcpToolProvider());
  const runs = new RunsService(db, new ModelRegistry(config.providers), tools, new PriceTable(config.modelPrices), config.runLeaseMs, logger);
  const files = new FilesService(db);
  const skillsDomain = createSkillsDomain(db, { agents, tools, runs });
  return {
    ...skillsDomain,
    logger,
    tenancy: new TenancyService(db),
    agents,
    tools,
    runs,
    files,
    conversations: new ConversationsService(db, agents, runs, files),
  };
}

export interface AppOptions {
  config: Config;
  db: Db;
  services?: Services;
}

export async function buildApp({ config, db, services = createServices(config, db) }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: services.logger,
    bodyLimit: BODY_LIMIT,
    requestIdHeader: 'x-request-id',
    genReqId: () => newId(),
    ajv: { customOptions: { removeAdditional: false } },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Every route, for the OpenAPI completeness test and the generated-input (fuzz) suite.
  const routeCatalog: RouteEntry[] = [];
  app.decorate('routeCatalog', routeCatalog);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method !== 'HEAD' && !route.schema?.hide) routeCatalog.push({ method, url: route.url, public: Boolean(route.config?.public) });
    }
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  registerErrorHandling(app);
  registerJsonParser(app);
  registerValidation(app, [Problem, Agent]);

  registerAuth(app, [(credential) => services.tenancy.authenticateApiKey(credential)]);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agentry',
        version: '0.1.0',
        description: 'Self-hosted, multi-tenant platform that hosts AI agents. Errors are RFC 9457 problem details.',
      },
      servers: [{ url: config.publicBaseUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key (agk_...) or OAuth access token' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}` },
  });
  // The interactive page is public, like the document it renders.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...(route.config ?? {}), public: true };
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());

  app.get('/healthz', {
    config: { public: true },
    schema: { tags: ['health'], summary: 'Liveness', response: { 200: Type.Object({ status: Type.Literal('ok') }) } },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    config: { public: true },
    schema: {
      tags: ['health'],
      summary: 'Readiness: the database answers',
      response: { 200: Type.Object({ status: Type.Literal('ready'), database: Type.String() }), 503: Type.Ref('Problem') },
    },
  }, async () => {
    try {
      await ping(db);
    } catch {
      throw new ProblemError(503, 'database_unavailable', 'the database does not answer');
    }
    return { status: 'ready' as const, database: db.dialect };
  });

  await app.register(tenancyRoutes, { tenancy: services.tenancy, db });
  await app.register(agentsRoutes, { agents: services.agents });
  await app.register(runsRoutes, { runs: services.runs, agents: services.agents, files: services.files });
  await app.register(conversationsRoutes, { conversations: services.conversations });
  await app.register(filesRoutes, { files: services.files });
  await app.register(skillsDomainRoutes, { ...services });

  // Lease renewal and recovery of runs interrupted elsewhere run while the server does.
  app.addHook('onReady', async () => {
    await services.runs.startBackground();
  });
  app.addHook('onClose', async () => {
    await services.runs.stop();
  });

  return app;
}
