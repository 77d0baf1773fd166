import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync, type FastifyReply } from 'fastify';
import pino from 'pino';
import { createA2aDomain } from './a2a/index.js';
import { createAgentsDomain } from './agents/index.js';
import { Agent } from './agents/schemas.js';
import type { AgentsService } from './agents/service.js';
import { createApprovalsDomain } from './approvals/index.js';
import type { ApprovalsService } from './approvals/service.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import type { FilesService } from './conversations/files.js';
import { createConversationsDomain } from './conversations/index.js';
import type { ConversationsService } from './conversations/service.js';
import type { Db } from './db/database.js';
import { delegationToolProvider } from './delegation/tools.js';
import { registerAuth } from './http/auth.js';
import { consolePlugin } from './http/console.js';
import { ProblemError, clientErrorHandler, frameworkErrorHandler, registerErrorHandling } from './http/errors.js';
import { healthPlugin } from './http/health.js';
import { registerJsonParser } from './http/json.js';
import { registerOpenApi } from './http/openapi.js';
import { requestChildLogger } from './http/request-logger.js';
import { Problem } from './http/schemas.js';
import { sharedSerializers } from './http/serializers.js';
import { closeAllStreams, openStreamCount } from './http/sse.js';
import { registerValidation } from './http/validation.js';
import { createIdempotencyDomain } from './idempotency/index.js';
import type { IdempotencyService } from './idempotency/service.js';
import { createIdentityDomain } from './identity/index.js';
import { loadMasterKey } from './identity/master-key.js';
import { SecretBox, isSealedBox } from './identity/secret-box.js';
import type { IdentityService } from './identity/service.js';
import { newRequestId } from './ids.js';
import { redactLogLine } from './log-redaction.js';
import { createCodeDomain } from './code/index.js';
import type { CodeService } from './code/service.js';
import { createCodeSandbox } from './code/sandbox/index.js';
import { createKnowledgeDomain } from './knowledge/index.js';
import type { KnowledgeService } from './knowledge/service.js';
import type { KnowledgeSearch } from './knowledge/search.js';
import { createMemoryDomain } from './memory/index.js';
import type { MemoryService } from './memory/service.js';
import { codeObserver } from './metrics/code.js';
import { registerMetrics } from './metrics/plugin.js';
import { Metrics } from './metrics/registry.js';
import { retentionObserver } from './metrics/retention.js';
import { observeServices } from './metrics/sources.js';
import { createModelsDomain } from './models/index.js';
import { createOpenAiCompatDomain } from './openai-compat/index.js';
import { createRetentionDomain } from './retention/index.js';
import type { RetentionSweep } from './retention/sweep.js';
import { createRunsDomain } from './runs/index.js';
import type { Admission, RunsService } from './runs/service.js';
import { ENQUEUE_WAIT_MS } from './runs/start.js';
import { runUsage } from './runs/usage.js';
import { PriceTable } from './runtime/models/prices.js';
import { ModelRegistry } from './runtime/models/registry.js';
import { mcpToolProvider } from './runtime/tools/mcp.js';
import type { ToolRegistry } from './runtime/tools/registry.js';
import { OutboundGuard } from './runtime/tools/ssrf.js';
import { LocalSignalBus, PostgresSignalBus, type SignalBus } from './signals/bus.js';
import type { ConnectorsService } from './skills/connectors/service.js';
import { createSkillsDomain } from './skills/index.js';
import type { SkillsService } from './skills/service.js';
import type { SkillTools } from './skills/tools.js';
import { createTasksDomain } from './tasks/index.js';
import { Task } from './tasks/schemas.js';
import type { TasksService } from './tasks/service.js';
import { createTenancyDomain } from './tenancy/index.js';
import {
  type AdmissionBatch,
  type LimitsService,
  type RateDecision,
  type RunLimits,
  newAdmissionBatch,
  withdrawAdmission,
} from './tenancy/limits.js';
import type { RetentionSettingsService } from './tenancy/retention.js';
import type { TenancyService } from './tenancy/service.js';
import { registerHttpTracing } from './tracing/http.js';
import { traceLogMixin } from './tracing/logs.js';
import { propagatingFetch } from './tracing/outbound.js';
import { Tracing } from './tracing/tracing.js';

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

/** The domains whose plugins buildApp registers. */
type DomainName =
  | 'tenancy'
  | 'agents'
  | 'runs'
  | 'conversations'
  | 'tasks'
  | 'retention'
  | 'approvals'
  | 'skills'
  | 'identity'
  | 'openaiCompat'
  | 'memory'
  | 'code'
  | 'knowledge'
  | 'a2a'
  | 'usage'
  | 'models';

/** The services of every domain, built once per process and shared by routes and background work. */
export interface Services {
  logger: FastifyBaseLogger;
  bus: SignalBus;
  tenancy: TenancyService;
  limits: LimitsService;
  agents: AgentsService;
  /** The registry assembling each run's tools from the domains' tool providers. */
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
  /** Code execution (docs/code-execution.md): the code tools' executions, files and limits around the sandbox. */
  code: CodeService;
  /** Knowledge bases (docs/knowledge.md): documents ingested in the background, and their search. */
  knowledge: { knowledge: KnowledgeService; search: KnowledgeSearch };
  /** Prometheus metrics (src/metrics/), when METRICS_TOKEN or METRICS_PORT exposes them; else nothing is measured. */
  metrics: Metrics | undefined;
  /** Skills (what agents may use), connectors, and the five skill and connector tools. */
  skills: SkillsService;
  connectors: ConnectorsService;
  skillTools: SkillTools;
  /** Each domain's Fastify plugin, its options bound: buildApp registers them in the order of their background work. */
  plugins: Record<DomainName, FastifyPluginAsync>;
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

/**
 * Builds every domain, each from what it needs of the domains built before it (`create<X>Domain`,
 * src/<x>/index.ts), and hands each what the others offer it (their `contributions`) when it is built.
 * Where a domain needs one built after it, the option is a lazy port: a function resolved when it is
 * called, after this function has returned.
 */
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
  // ---- cross-cutting: signals, metrics, outbound requests, model providers, sealed credentials

  // One process on SQLite; on PostgreSQL, signals cross replicas with LISTEN/NOTIFY.
  const bus: SignalBus = config.databaseUrl
    ? new PostgresSignalBus(
        config.databaseUrl,
        (err) => logger.warn({ err }, 'signal bus problem (its connection, or a malformed notification dropped)'),
        db.changes,
      )
    : new LocalSignalBus();
  const metrics =
    config.metrics.token || config.metrics.port !== undefined ? new Metrics({ tenantLabel: config.metrics.tenantLabel }) : undefined;
  // Every outbound request made on a tenant's behalf connects through this guard (docs/operations.md).
  const outbound = new OutboundGuard({ allowedHosts: config.mcpAllowedHosts, allowPrivateNetworks: config.mcpAllowPrivateNetworks });
  // Traced, each outbound request carries the run's traceparent (MCP servers, remote A2A agents).
  const outboundFetch = tracing ? propagatingFetch(tracing, outbound.fetch) : outbound.fetch;
  const models = new ModelRegistry(config.providers);
  const prices = new PriceTable(config.modelPrices);
  // Tools' credentials (remote A2A agents' and MCP servers' header values) are sealed at rest by the
  // agents service and opened for a call; the purpose keeps its first name so stored values still open.
  const masterKey = loadMasterKey(config);
  const toolCredentials = new SecretBox(masterKey, 'a2a-credentials');

  // ---- the domains, each after those it uses

  const agents = createAgentsDomain({
    db,
    defaultModel: config.defaultModel,
    // An agent's fallback models must be usable with this configuration (docs/models.md "Fallback models").
    modelUnavailable: (model) => models.unavailable(model),
    outboundRefusal: (url) => outbound.refusalOfUrl(url),
    credentials: {
      seal: (plain, owner) => toolCredentials.seal(plain, owner),
      isSealed: isSealedBox,
      opens: (sealed, owner) => toolCredentials.open(sealed, owner) !== null,
    },
    // Lazy ports: what skills, memory and identity attach to an agent is dropped or copied with it, in its transaction.
    onDeleted: async (trx, tenantId, agentId) => {
      for (const domain of [skills, memory, identity]) await domain.contributions.onAgentDeleted(trx, tenantId, agentId);
    },
    onDuplicated: (trx, tenantId, fromId, toId) => skills.contributions.onAgentDuplicated(trx, tenantId, fromId, toId),
  });
  const tenancy = createTenancyDomain({
    db,
    agentBudgets: agents.agents,
    runUsage,
    defaultRateLimit: config.rateLimitPerMinute,
    tokenRateLimit: config.tokenRateLimitPerMinute,
    clock,
  });
  // A claim is taken over only once no start can still be waiting to record it (an enqueued start waits longest).
  const idempotency = createIdempotencyDomain({ db, abandonedAfterMs: ENQUEUE_WAIT_MS + 60_000, clock });
  // Lazy port: a posted message starts a run.
  const conversations = createConversationsDomain({ db, agents: agents.agents, runs: () => runs.contributions.messageRuns });
  const skills = createSkillsDomain({
    db,
    agents: agents.agents,
    masterKey,
    // Lazy port: skill_request and connector_request become awaiting_approval tasks.
    approvals: () => tasks.contributions.approvalGateway,
    protectedResource: { publicBaseUrl: config.publicBaseUrl, issuer: config.issuer },
  });
  const identity = createIdentityDomain({
    db,
    config,
    tenancy: tenancy.tenancy,
    agents: agents.agents,
    log: logger,
    observer: metrics?.identity,
    // An agent's badge lists the skills it may use.
    skillCapabilities: skills.contributions.skillCapabilities,
    limits: tenancy.limits,
    clock,
  });
  // The memory tools ask TBAC as every tool does.
  const memory = createMemoryDomain({ db, agents: agents.agents, policies: identity.identity.policies });
  // The code tools ask TBAC as every tool does; their limits are kept in the tenant's settings.
  const code = createCodeDomain({
    db,
    // Started when code is first asked for; off, or where it cannot isolate, the code tools are not offered.
    sandbox: async () =>
      config.code.enabled
        ? createCodeSandbox({
            maxima: config.code.maxima,
            poolSize: config.code.poolSize,
            maxConcurrent: config.code.maxConcurrent,
            onWarning: (message) => logger.warn(message),
          })
        : undefined,
    // A tenant's concurrent executions are at most what this process runs at once.
    maxima: { ...config.code.maxima, concurrentExecutions: config.code.maxConcurrent },
    tenancy: tenancy.tenancy,
    files: conversations.files,
    skills: skills.skills,
    policies: identity.identity.policies,
    tracing,
    observer: metrics && codeObserver(metrics),
  });
  // Documents uploaded as files are read through the files service; ingestion wakes replicas through the bus.
  // knowledge_search asks TBAC as every tool does.
  const knowledge = createKnowledgeDomain({
    db,
    bus,
    files: conversations.files,
    providers: config.providers,
    models,
    log: logger,
    policies: identity.identity.policies,
    // A dead process's ingestion is taken over when its lease lapses, as its runs and task work are.
    ingestion: { leaseMs: config.runLeaseMs, reader: config.knowledgeReader },
    search: config.knowledgeSearch,
    usageObserver: metrics?.knowledgeTokens,
  });
  const a2a = createA2aDomain({
    agents: agents.agents,
    skillBriefs: skills.contributions.skillCapabilities,
    publicBaseUrl: config.publicBaseUrl,
    // Lazy port: an A2A task is a run.
    runs: () => runs.runs,
    remoteAgents: {
      fetch: outboundFetch,
      policies: identity.identity.policies,
      credentials: toolCredentials,
      plainHttpAllowed: (url) => outbound.listsExplicitly(url),
    },
  });
  const runs = createRunsDomain({
    db,
    models,
    prices,
    leaseMs: config.runLeaseMs,
    log: logger,
    bus,
    admission: runAdmission(tenancy.limits),
    agents: agents.agents,
    files: conversations.files,
    idempotency: idempotency.idempotency,
    observer: metrics?.runs,
    tracing,
    clock,
    // In this order: of two tools with one name, the first provider's is kept.
    toolProviders: {
      mcp: mcpToolProvider(outboundFetch, { isSealed: isSealedBox, open: (sealed, owner) => toolCredentials.open(sealed, owner) }),
      // Lazy port: a delegation starts a run of the callee.
      delegation: delegationToolProvider(identity.identity, agents.agents, () => runs.runs),
      ...skills.contributions.toolProviders,
      ...a2a.contributions.toolProviders,
      ...memory.contributions.toolProviders,
      ...code.contributions.toolProviders,
      ...knowledge.contributions.toolProviders,
    },
    systemPromptContributors: [skills.contributions.systemPrompt, memory.contributions.systemPrompt],
    // Lazy ports: tool calls that wait for a person are recorded by approvals; a run's end settles a
    // task's job and closes the run's waiting calls.
    toolApprovals: () => approvals.contributions.toolApprovals,
    finishedListeners: [(run) => tasks.contributions.runFinished(run), (run) => approvals.contributions.runFinished(run)],
  });
  const tasks = createTasksDomain({
    db,
    agents: agents.agents,
    runs: runs.runs,
    idempotency: idempotency.idempotency,
    config,
    log: logger,
    tracing,
    clock,
    cronObserver: metrics?.cronFired,
    // Approving a skill or connector request performs it.
    approvalActions: skills.contributions.approvalActions,
  });
  const approvals = createApprovalsDomain({ db, runs: runs.runs, tasks: tasks.tasks, log: logger, clock });
  const openaiCompat = createOpenAiCompatDomain({ runs: runs.runs, agents: agents.agents, approvalWaitMs: config.openaiApprovalWaitMs });
  const retention = createRetentionDomain({
    db,
    tenancy: tenancy.tenancy,
    runs: runs.contributions.retention,
    conversations: conversations.contributions.retention,
    knowledge: knowledge.contributions.retention,
    log: logger,
    intervalMs: config.retentionSweepMs,
    clock,
    onSwept: metrics && retentionObserver(metrics),
  });
  const modelCatalog = createModelsDomain({ registry: models, prices, defaultModel: config.defaultModel });

  return {
    logger,
    bus,
    tenancy: tenancy.tenancy,
    limits: tenancy.limits,
    agents: agents.agents,
    tools: runs.tools,
    outbound,
    runs: runs.runs,
    models,
    files: conversations.files,
    conversations: conversations.conversations,
    identity: identity.identity,
    tasks: tasks.tasks,
    approvals: approvals.approvals,
    idempotency: idempotency.idempotency,
    retention: { settings: retention.settings, sweep: retention.sweep },
    tracing,
    memory: memory.memory,
    code: code.code,
    knowledge: { knowledge: knowledge.knowledge, search: knowledge.search },
    metrics,
    skills: skills.skills,
    connectors: skills.connectors,
    skillTools: skills.skillTools,
    plugins: {
      tenancy: tenancy.plugin,
      agents: agents.plugin,
      runs: runs.plugin,
      conversations: conversations.plugin,
      tasks: tasks.plugin,
      retention: retention.plugin,
      approvals: approvals.plugin,
      skills: skills.plugin,
      identity: identity.plugin,
      openaiCompat: openaiCompat.plugin,
      memory: memory.plugin,
      code: code.plugin,
      knowledge: knowledge.plugin,
      a2a: a2a.plugin,
      usage: runs.usagePlugin,
      models: modelCatalog.plugin,
    },
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

  // Each domain's plugin, in the order of its background work: a plugin's onReady hooks run after those
  // of the plugins registered before it, its onClose hooks before theirs. So tasks (which start runs)
  // stop before runs stop, as in shutdown(). The order is also that of the OpenAPI document's paths.
  const domains = services.plugins;
  for (const plugin of [
    domains.tenancy,
    domains.agents,
    // Before runs: the sandbox closes after the runs that use it have stopped.
    domains.code,
    domains.runs,
    domains.conversations,
    domains.tasks,
    domains.retention,
    domains.approvals,
    domains.skills,
    domains.identity,
    domains.openaiCompat,
    domains.memory,
    domains.knowledge,
    domains.a2a,
    domains.usage,
    domains.models,
  ]) {
    await app.register(plugin);
  }
  // The web console at / (its own paths only; docs/console.md).
  await app.register(consolePlugin, { dir: config.consoleDir, publicBaseUrl: config.publicBaseUrl });

  return app;
}
