import { collectDefaultMetrics, Registry } from 'prom-client';
import { BoundedLabel, defineMetrics, type GaugeSources, type MetricDefinitions } from './definitions.js';

/** Distinct model names kept as labels; later ones are "other". */
const MODEL_LABELS = 100;
/** Distinct builtin and skill tool names kept as labels. */
const TOOL_LABELS = 200;
/** Tool sources whose names are the platform's own (a bounded set); others' names are tenants' ("other"). */
const NAMED_SOURCES = new Set(['builtin', 'skill']);

/** What the run engine reports (runs/observer.ts's RunObserver, met structurally: metrics import no domain). */
interface EndedRun {
  kind: string;
  tenantId: string;
  model: string;
  steps: number;
  /** Steps, tokens and cost by the model that served them (runs/fallbacks.ts usageByModel). */
  byModel: readonly { model: string; steps: number; inputTokens: number; outputTokens: number; cost: number }[];
  /** The model whose provider failed the run, when one did. */
  failedModel?: string;
  toolSources: ReadonlyMap<string, string> | undefined;
  outcome: {
    status: string;
    error: { code: string } | null;
    cost: number;
    tokenUsage: { inputTokens: number; outputTokens: number };
    duration: number;
    toolCalls: readonly { name: string; result: Record<string, unknown> | null; startedAt: string; completedAt: string | null }[];
  };
}

/**
 * The metrics of one app (its own prom-client registry: tests start many apps in one process, so the
 * global register is never used). Retention's sweep calls `metrics.retentionDeleted(table, rows)`.
 */
export class Metrics {
  readonly registry = new Registry();
  /** Filled in by app.ts once the services exist; read when scraped. */
  readonly sources: GaugeSources = {};
  readonly definitions: MetricDefinitions;
  private readonly models = new BoundedLabel(MODEL_LABELS);
  private readonly toolNames = new BoundedLabel(TOOL_LABELS);

  constructor(private readonly options: { tenantLabel: boolean }) {
    collectDefaultMetrics({ register: this.registry });
    this.definitions = defineMetrics(this.registry, options.tenantLabel, this.sources, (id) => this.modelLabels(id));
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** One HTTP request answered: `route` is the route's template (undefined when no route matched). */
  request(route: string | undefined, method: string, status: number, seconds: number) {
    const labels = { route: route ?? '(unmatched)', method, status_class: statusClass(status) };
    this.definitions.httpRequests.inc(labels);
    this.definitions.httpDuration.observe(labels, seconds);
  }

  /** A request refused by a limit (its error's code: rate_limited, concurrency_limit, budget_exceeded...). */
  rejected(reason: string, tenantId: string | undefined) {
    this.definitions.rejections.inc(this.tenant({ reason }, tenantId));
  }

  /** Identity's observer (identity/context.ts's IdentityObserver): tokens issued by kind, authorize decisions by reason. */
  readonly identity = {
    tokenIssued: (type: string, tenantId: string) => this.definitions.tokensIssued.inc(this.tenant({ type }, tenantId)),
    authorized: (allowed: boolean, reason: string, tenantId: string | null) =>
      this.definitions.authorizeDecisions.inc(this.tenant({ decision: allowed ? 'allow' : 'deny', reason }, tenantId ?? undefined)),
  };

  /**
   * Rows deleted by the retention sweep (src/retention/), by table: `services.metrics?.retentionDeleted('runs', n)`.
   * Nothing to do when metrics are off (services.metrics undefined).
   */
  readonly retentionDeleted = (table: string, rows: number) => {
    if (rows > 0) this.definitions.retentionDeleted.inc({ table }, rows);
  };

  /** Cron times of tasks with this misfire policy: fired, or found past the grace (misfired); tasks/schedules.ts's CronObserver. */
  readonly cronFired = (policy: string, outcome: 'fired' | 'misfired', count: number) =>
    this.definitions.taskFires.inc({ policy, outcome }, count);

  /** Tokens knowledge spent with a provider (knowledge/usage/service.ts's UsageObserver). */
  readonly knowledgeTokens = (spend: { tenantId: string; kind: string; model: string; inputTokens: number; outputTokens: number }) => {
    const labels = { kind: spend.kind, ...this.modelLabels(spend.model) };
    if (spend.inputTokens)
      this.definitions.knowledgeTokens.inc(this.tenant({ ...labels, direction: 'input' }, spend.tenantId), spend.inputTokens);
    if (spend.outputTokens)
      this.definitions.knowledgeTokens.inc(this.tenant({ ...labels, direction: 'output' }, spend.tenantId), spend.outputTokens);
  };

  /** The run engine's observer (runs/observer.ts): runs, model steps, tokens, cost, tools, events. */
  readonly runs = {
    started: (kind: string, tenantId: string) => this.definitions.runsStarted.inc(this.tenant({ kind }, tenantId)),
    firstToken: (kind: string, seconds: number) => this.definitions.timeToFirstToken.observe({ kind }, seconds),
    published: (event: string) => this.definitions.eventsPublished.inc({ event }),
    recovered: () => this.definitions.runsRecovered.inc(),
    injected: () => this.definitions.injections.inc(),
    cancelled: () => this.definitions.cancellations.inc(),
    replayed: () => this.definitions.replays.inc(),
    retried: (model: string, code: string) => this.definitions.providerRetries.inc({ ...this.modelLabels(model), code }),
    ended: (run: EndedRun) => this.ended(run),
  };

  /** A model id's labels: its provider, and its name bounded (later names are "other"). */
  private modelLabels(id: string) {
    const provider = providerOf(id);
    return { provider, model: this.models.of(id.slice(provider.length + 1)) };
  }

  private ended(run: EndedRun) {
    const d = this.definitions;
    const { outcome } = run;
    d.runsEnded.inc(this.tenant({ kind: run.kind, status: outcome.status }, run.tenantId));
    d.runDuration.observe({ kind: run.kind, status: outcome.status }, outcome.duration / 1000);
    // Each model's share goes to its own labels: a fallback's steps are never the agent's model's.
    for (const served of run.byModel) {
      const labels = this.modelLabels(served.model);
      if (served.steps) d.modelSteps.inc(this.tenant({ ...labels }, run.tenantId), served.steps);
      if (served.inputTokens) d.tokens.inc(this.tenant({ ...labels, direction: 'input' }, run.tenantId), served.inputTokens);
      if (served.outputTokens) d.tokens.inc(this.tenant({ ...labels, direction: 'output' }, run.tenantId), served.outputTokens);
      if (served.cost) d.cost.inc(this.tenant({ ...labels }, run.tenantId), served.cost);
    }
    const code = outcome.error?.code;
    if (code?.startsWith('provider_')) d.providerErrors.inc({ ...this.modelLabels(run.failedModel ?? run.model), code });
    for (const call of outcome.toolCalls) {
      // A name no source offered is the model's invention (an invalid call): never a label of its own.
      const provider = run.toolSources?.get(call.name);
      const source = provider === undefined ? 'unknown' : sourceOf(provider);
      const name = NAMED_SOURCES.has(source) ? this.toolNames.of(call.name) : 'other';
      const failed = !call.result || 'error' in call.result;
      d.toolCalls.inc(this.tenant({ source, name, outcome: failed ? 'error' : 'ok' }, run.tenantId));
      if (call.completedAt) d.toolDuration.observe({ source, name }, (Date.parse(call.completedAt) - Date.parse(call.startedAt)) / 1000);
    }
  }

  private tenant<L extends Record<string, string>>(labels: L, tenantId: string | undefined): L {
    if (this.options.tenantLabel) (labels as Record<string, string>).tenant = tenantId ?? '';
    return labels;
  }
}

/** A status code's class as the HTTP metrics' label: 1xx to 5xx (codes outside 100-599 count in the nearest). */
function statusClass(status: number): string {
  return `${Math.min(Math.max(Math.floor(status / 100), 1), 5)}xx`;
}

/** The provider part of a model id (provider/name). */
function providerOf(model: string): string {
  const slash = model.indexOf('/');
  return slash > 0 ? model.slice(0, slash) : 'unknown';
}

/** A tool provider's registered name as the metrics' source: skill, mcp, delegation, a2a; the platform's own tools are builtin. */
function sourceOf(provider: string | undefined): string {
  switch (provider) {
    case 'skills':
      return 'skill';
    case 'mcp':
    case 'delegation':
    case 'a2a':
      return provider;
    default:
      return 'builtin';
  }
}
