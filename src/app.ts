import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import pino from 'pino';
import { agentsPlugin } from './agents/plugin.js';
import { Agent } from './agents/schemas.js';
import { AgentsService } from './agents/service.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import { registerAuth } from './http/auth.js';
import { consolePlugin } from './http/console.js';
import { healthPlugin } from './http/health.js';
import { registerOpenApi } from './http/openapi.js';
import { requestChildLogger } from './http/request-logger.js';
import { redactLogLine } from './log-redaction.js';
import { ProblemError, clientErrorHandler, frameworkErrorHandler, registerErrorHandling } from './http/errors.js';
import { registerJsonParser } from './http/json.js';
import { closeAllStreams, openStreamCount } from './http/sse.js';
import { Problem } from './http/schemas.js';
import { registerValidation } from './http/validation.js';
import { sharedSerializers } from './http/serializers.js';
import { newRequestId } from './ids.js';
import { FilesService } from './conversations/files.js';
import { delegationToolProvider } from './delegation/tools.js';
import { conversationsPlugin } from './conversations/plugin.js';
import { ConversationsService } from './conversations/service.js';
import { runsPlugin } from './runs/plugin.js';
import { dailyUsageRoutes } from './runs/daily-usage/routes.js';
import { DailyUsageReport } from './runs/daily-usage/service.js';
import { messageRuns } from './runs/messages.js';
import { type Admission, RunsService } from './runs/service.js';
import { ENQUEUE_WAIT_MS } from './runs/start.js';
import { runUsage } from './runs/usage.js';
import { runRetention } from './runs/retention.js';
import { conversationRetention } from './conversations/retention.js';
import { retentionPlugin } from './retention/plugin.js';
import { RetentionSweep } from './retention/sweep.js';
import { modelsRoutes } from './models/routes.js';
import { ModelCatalog } from './models/service.js';
import { observeRetention } from './metrics/retention.js';
import { RetentionSettingsService } from './tenancy/retention.js';
import { PriceTable } from './runtime/models/prices.js';
import { ModelRegistry } from './runtime/models/registry.js';
import { mcpToolProvider } from './runtime/tools/mcp.js';
import { ToolRegistry } from './runtime/tools/registry.js';
import { OutboundGuard } from './runtime/tools/ssrf.js';
import { LocalSignalBus, PostgresSignalBus, type SignalBus } from './signals/bus.js';
import { identityPlugin } from './identity/plugin.js';
import { IdentityService } from './identity/service.js';
import { loadMasterKey } from './identity/master-key.js';
import { IdempotencyService } from './idempotency/service.js';
import { tasksPlugin } from './tasks/plugin.js';
import { approvalsPlugin } from './approvals/plugin.js';
import { ApprovalsService } from './approvals/service.js';
import { Task } from './tasks/schemas.js';
import { TasksService } from './tasks/service.js';
import { skillsPlugin } from './skills/plugin.js';
import { createSkillsDomain, registerSkillApprovalHandlers, type SkillsDomain } from './skills/index.js';
import { openaiCompatPlugin } from './openai-compat/plugin.js';
import { a2aPlugin } from './a2a/plugin.js';
import { a2aToolProvider } from './a2a/tools.js';
import { createMemoryDomain } from './memory/index.js';
import { memoryPlugin } from './memory/plugin.js';
import type { MemoryService } from './memory/service.js';
import { SecretBox, isSealedBox } from './identity/secret-box.js';
import { tenancyPlugin } from './tenancy/plugin.js';
import { TenancyService } from './tenancy/service.js';
import {
  type AdmissionBatch,
  LimitsService,
  type RateDecision,
  type RunLimits,
  newAdmissionBatch,
  withdrawAdmission,
} from './tenancy/limits.js';
import { registerHttpTracing } from './tracing/http.js';
import { traceLogMixin } from './tracing/logs.js';
import { propagatingFetch } from './tracing/outbound.js';
import { Tracing } from './tracing/tracing.js';
import { registerMetrics } from './metrics/plugin.js';
import { Metrics } from './metrics/registry.js';
import { observeServices } from './metrics/sources.js';

const BODY_LIMIT = 1024 * 1024;

interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeCatalog: RouteEntry[];
    /** Set when a graceful shutdown begins: new requests get 503 shutting_down. */
    lifecycle: { draining: boolean };
  }
}

/** The services of every domain, built once per process and shared by routes and background work. */
export interface Services extends SkillsDomain {
  logger: FastifyBaseLogger;
  bus: SignalBus;
  tenancy: TenancyService;
  limits: LimitsService;
  agents: AgentsService;
  tools: ToolRegistry<Agent>;
  /** The guard every outbound request made on a tenant's behalf connects through. */
  outbound: OutboundGuard;
  runs: RunsService;
  /** The model providers, and this process's breakers (`models.breakers.states()`: metrics, checks). */
  models: ModelRegistry;
  files: FilesService;
  conversations: ConversationsService;
  identity: IdentityService;
  /** Tasks and the scheduler; also the ApprovalGateway other domains use (src/tasks/approvals.ts). */
  tasks: TasksService;
  /** Tool calls that wait for a person, and the inbox where they and tasks awaiting approval are decided. */
  approvals: ApprovalsService;
  /** Idempotency-Key claims, shared by the run starter (runs/starter.ts) and task creation. */
  idempotency: IdempotencyService;
  /** Retention (docs/operations.md): each tenant's settings, and the sweep deleting what is past them. */
  retention: { settings: RetentionSettingsService; sweep: RetentionSweep };
  /** OpenTelemetry traces (src/tracing/), when an OTLP endpoint is set; else nothing is traced. */
  tracing: Tracing | undefined;
  /** Agents' memory blocks: in every run's system prompt, edited by people and by the agents' memory tools. */
  memory: MemoryService;
  /** Prometheus metrics (src/metrics/), when METRICS_TOKEN or METRICS_PORT exposes them; else nothing is measured. */
  metrics: Metrics | undefined;
}

/** The process logger: JSON lines; every line has its credentials redacted before it is written (log-redaction.ts). */
export function createLogger(config: Config, destination?: pino.DestinationStream): FastifyBaseLogger {
  // With tracing on, a line written inside a span carries its trace_id and span_id (tracing/logs.ts).
  const mixin = config.tracing.endpoint ? traceLogMixin : undefined;
  return pino({ level: config.logLevel, hooks: { streamWrite: redactLogLine }, mixin }, destination);
}

/** Tenancy's limits as the admission a run's start asks (runs/admission.ts): the two domains meet only here. */
function runAdmission(limits: LimitsService): Admission<RunLimits, AdmissionBatch> {
  return {
    runLimits: (tenantId, agentId) => limits.runLimits(tenantId, agentId),
    newBatch: newAdmissionBatch,
    admit: (trx, a) => limits.admitInTransaction(trx, a.batch, a, a.limits),
    withdraw: withdrawAdmission,
  };
}

export interface ServicesOptions {
  /** Default: JSON lines on stdout at the configured level (createLogger). */
  logger?: FastifyBaseLogger;
  /** Default: what the configuration's OTLP endpoint asks for (none without one). */
  tracing?: Tracing;
  /** The one clock every service reads (clock.ts; default: real time); tests pass a ManualClock. */
  clock?: Clock;
}

export function createServices(
  config: Config,
  db: Db,
  { logger = createLogger(config), tracing = Tracing.create(config.tracing), clock = systemClock }: ServicesOptions = {},
): Services {
  // One process on SQLite; on PostgreSQL, signals cross replicas with LISTEN/NOTIFY.
  const bus: SignalBus = config.databaseUrl
    ? new PostgresSignalBus(
        config.databaseUrl,
        (err) => logger.warn({ err }, 'signal bus problem (its connection, or a malformed notification dropped)'),
        db.changes,
      )
    : new LocalSignalBus();
  const tenancy = new TenancyService(db);
  const models = new ModelRegistry(config.providers);
  // An agent's fallback models must be usable with this configuration (docs/models.md "Fallback models").
  const agents = new AgentsService(db, config.defaultModel, (model) => models.unavailable(model));
  const limits = new LimitsService(
    db,
    { agentBudgets: agents, runUsage },
    { defaultRateLimit: config.rateLimitPerMinute, tokenRateLimit: config.tokenRateLimitPerMinute, clock },
  );
  const tools = new ToolRegistry<Agent>();
  const metrics =
    config.metrics.token || config.metrics.port !== undefined ? new Metrics({ tenantLabel: config.metrics.tenantLabel }) : undefined;
  // Every outbound request made on a tenant's behalf connects through this guard (docs/operations.md).
  const outbound = new OutboundGuard({ allowedHosts: config.mcpAllowedHosts, allowPrivateNetworks: config.mcpAllowPrivateNetworks });
  // Traced, each outbound request carries the run's traceparent (MCP servers, remote A2A agents).
  const outboundFetch = tracing ? propagatingFetch(tracing, outbound.fetch) : outbound.fetch;
  // Tools' credentials (remote A2A agents' and MCP servers' header values) are sealed at rest by the
  // agents service and opened for a call; the purpose keeps its first name so stored values still open.
  const masterKey = loadMasterKey(config);
  const toolCredentials = new SecretBox(masterKey, 'a2a-credentials');
  tools.register(
    'mcp',
    mcpToolProvider(outboundFetch, { isSealed: isSealedBox, open: (sealed, owner) => toolCredentials.open(sealed, owner) }),
  );
  const files = new FilesService(db);
  // A claim is taken over only once no start can still be waiting to record it (an enqueued start waits longest).
  const idempotency = new IdempotencyService(db, { abandonedAfterMs: ENQUEUE_WAIT_MS + 60_000, clock });
  const runs = new RunsService({
    db,
    models,
    tools,
    prices: new PriceTable(config.modelPrices),
    leaseMs: config.runLeaseMs,
    log: logger,
    bus,
    admission: runAdmission(limits),
    agents,
    files,
    idempotency,
    observer: metrics?.runs,
    tracing,
    clock,
  });
  const identity = new IdentityService(db, config, tenancy, agents, logger, { clock });
  if (metrics) identity.useObserver(metrics.identity);
  tools.register(
    'delegation',
    delegationToolProvider(identity, agents, () => runs),
  );
  const skillsDomain = createSkillsDomain(db, { agents, tools, runs, masterKey });
  agents.useCredentialSealer({
    seal: (plain, owner) => toolCredentials.seal(plain, owner),
    isSealed: isSealedBox,
    opens: (sealed, owner) => toolCredentials.open(sealed, owner) !== null,
  });
  // Remote A2A agents as tools.
  tools.register(
    'a2a',
    a2aToolProvider(outboundFetch, identity.policies, toolCredentials, (url) => outbound.listsExplicitly(url)),
  );
  // Memory blocks join every run's system prompt; the memory tools ask TBAC as every tool does.
  const memory = createMemoryDomain(db, { agents, tools, runs, policies: identity.policies });
  // Deleting an agent ends its identity; its badge lists the skills it may use.
  agents.deleteHooks.push(identity.forgetAgent);
  identity.useSkillCapabilities((tenantId, agentId) => skillsDomain.skills.usableSkillBriefs(tenantId, agentId));
  const tasks = new TasksService({ db, agents, runs, idempotency, config, log: logger, tracing, clock });
  if (metrics) tasks.useCronObserver(metrics.cronFired);
  // skill_request and connector_request become awaiting_approval tasks; approving performs them.
  registerSkillApprovalHandlers(tasks, skillsDomain.skillTools);
  // Tool calls that wait for a person are recorded by the approvals domain; runs resume once they are decided.
  const approvals = new ApprovalsService({ db, runs, tasks, log: logger, clock });
  runs.useToolApprovals(approvals);
  const retentionSettings = new RetentionSettingsService(db, tenancy);
  const retention = {
    settings: retentionSettings,
    sweep: new RetentionSweep({
      db,
      tenants: retentionSettings,
      // A deleted run's tool approvals go with it.
      runs: runRetention(db, approvals),
      conversations: conversationRetention(db),
      log: logger,
      intervalMs: config.retentionSweepMs,
      clock,
    }),
  };
  if (metrics) observeRetention(metrics, retention.sweep);
  return {
    ...skillsDomain,
    logger,
    bus,
    tenancy,
    limits,
    agents,
    tools,
    outbound,
    runs,
    models,
    files,
    conversations: new ConversationsService(db, agents, messageRuns(runs)),
    identity,
    tasks,
    approvals,
    idempotency,
    retention,
    tracing,
    memory,
    metrics,
  };
}

/**
 * Graceful stop (SIGTERM): turn new requests away, let running runs and their streams finish for up
 * to the grace period (then end them as interrupted), close remaining streams, stop background work.
 */
export async function shutdown(app: FastifyInstance, services: Services, graceMs: number): Promise<void> {
  app.lifecycle.draining = true;
  // No new task work is claimed here; runs already going get the grace period.
  await services.tasks.stop();
  await services.runs.drain(graceMs);
  closeAllStreams(app);
  await app.close();
}

/** RateLimit-* headers when a limit applies; 429 when it is used up. */
function applyRate(reply: FastifyReply, rate: RateDecision | null) {
  if (!rate) return;
  reply.header('ratelimit-limit', rate.limit).header('ratelimit-remaining', rate.remaining).header('ratelimit-reset', rate.resetSeconds);
  if (!rate.allowed) {
    throw new ProblemError(429, 'rate_limited', `this key may make ${rate.limit} requests per minute`, undefined, {
      'retry-after': String(rate.retryAfter),
    });
  }
}

export interface AppOptions {
  config: Config;
  db: Db;
  services?: Services;
}

/** TRUST_PROXY as a hop count: the nearest `hops` addresses are proxies (proxy-addr's hop numbering). */
const trustHops = (hops: number) => (_address: string, hop: number) => hop < hops;

export async function buildApp({ config, db, services = createServices(config, db) }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: services.logger,
    bodyLimit: BODY_LIMIT,
    requestIdHeader: 'x-request-id',
    genReqId: newRequestId,
    // The caller's address (req.ip) from X-Forwarded-For only behind the proxies TRUST_PROXY names.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    // Each request's logger is made when the request first logs at an enabled level (most never do).
    childLoggerFactory: requestChildLogger,
    ajv: { customOptions: { removeAdditional: false } },
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers } },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Errors raised before any route or hook runs, and requests Node's parser refuses, are problems too.
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    http: { requireHostHeader: false },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Every route, for the OpenAPI completeness test and the generated-input (fuzz) suite.
  const routeCatalog: RouteEntry[] = [];
  app.decorate('routeCatalog', routeCatalog);
  app.decorate('sseHeartbeatMs', config.sseHeartbeatMs);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method !== 'HEAD' && !route.schema?.hide) routeCatalog.push({ method, url: route.url, public: Boolean(route.config?.public) });
    }
  });

  // Hooks that run for every request are plain callbacks, not async functions: an async hook costs
  // each request a promise and a trip through the microtask queue even when it has nothing to do.
  app.addHook('onSend', (request, reply, _payload, done) => {
    // nosniff on every response: API JSON and problems are never to be read as HTML or script.
    reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff');
    done();
  });

  registerErrorHandling(app);

  // A span per request, before every other hook and route so they all run inside it (tracing/http.ts).
  const tracing = services.tracing;
  if (tracing) {
    registerHttpTracing(app, tracing);
    app.addHook('onClose', async () => {
      await tracing.shutdown();
    });
  }

  // Metrics come before every route, so their hooks see them all: /metrics and the METRICS_PORT server (docs/operations.md).
  registerMetrics(app, {
    metrics: services.metrics,
    token: config.metrics.token?.reveal(),
    port: config.metrics.port,
    host: config.metrics.host,
  });
  if (services.metrics) {
    const { runs, tasks, models, approvals } = services;
    observeServices(services.metrics, { app, db, runs, tasks, models, approvals, openStreams: openStreamCount });
  }

  // During a graceful shutdown new requests are turned away (clients retry on another replica).
  const lifecycle = { draining: false };
  app.decorate('lifecycle', lifecycle);
  app.addHook('onRequest', (request, reply, done) => {
    if (!lifecycle.draining || request.url === '/healthz') return done();
    reply.header('connection', 'close');
    done(
      new ProblemError(503, 'shutting_down', 'this server is shutting down; retry on another replica', undefined, { 'retry-after': '1' }),
    );
  });
  registerJsonParser(app);
  registerValidation(app, [Problem, Agent, Task]);

  // The document collects every route, so it comes before them all; its page is marked public
  // before registerAuth looks at each route.
  await registerOpenApi(app, { publicBaseUrl: config.publicBaseUrl });
  registerAuth(
    app,
    [(credential) => services.tenancy.authenticateApiKey(credential), services.identity.verifyCredential],
    // Per-key request limits, after authentication (the key decides the limit).
    async (request, reply) => applyRate(reply, await services.limits.checkRate(request.principal)),
  );
  await app.register(healthPlugin, { db });

  // The signal bus, which runs and tasks use in the background, starts before them and closes after
  // them: the root's onReady hooks run before its plugins', and onClose hooks run last-added first.
  app.addHook('onReady', async () => {
    if (services.bus instanceof PostgresSignalBus) await services.bus.start();
  });
  app.addHook('onClose', async () => {
    await services.bus.close();
    await services.outbound.close();
  });

  // Each domain, with what it needs. The order is the background work's: a plugin's onReady hooks run
  // after those of the plugins registered before it, its onClose hooks before theirs. So tasks (which
  // start runs) stop before runs stop, as in shutdown().
  await app.register(tenancyPlugin, { tenancy: services.tenancy, limits: services.limits });
  await app.register(agentsPlugin, { agents: services.agents });
  await app.register(runsPlugin, { runs: services.runs });
  await app.register(conversationsPlugin, { conversations: services.conversations, files: services.files });
  await app.register(tasksPlugin, { tasks: services.tasks });
  await app.register(retentionPlugin, services.retention);
  await app.register(approvalsPlugin, { approvals: services.approvals });
  await app.register(skillsPlugin, {
    skills: services.skills,
    connectors: services.connectors,
    skillTools: services.skillTools,
    agents: services.agents,
    protectedResource: { publicBaseUrl: config.publicBaseUrl, issuer: config.issuer },
  });
  await app.register(identityPlugin, { identity: services.identity, limits: services.limits });
  await app.register(openaiCompatPlugin, {
    runs: services.runs,
    agents: services.agents,
    approvalWaitMs: config.openaiApprovalWaitMs,
  });
  await app.register(memoryPlugin, { memory: services.memory });
  await app.register(a2aPlugin, {
    runs: services.runs,
    agents: services.agents,
    skills: services.skills,
    publicBaseUrl: config.publicBaseUrl,
  });
  // Runs, cost and tokens per day: the aggregate the console's usage page charts.
  await app.register(dailyUsageRoutes, { report: new DailyUsageReport(db) });
  // The models this server offers, the console's model picker (docs/models.md).
  await app.register(modelsRoutes, {
    catalog: new ModelCatalog(services.models, new PriceTable(config.modelPrices), config.defaultModel),
  });
  // The web console at / (its own paths only; docs/console.md).
  await app.register(consolePlugin, { dir: config.consoleDir, publicBaseUrl: config.publicBaseUrl });

  return app;
}
