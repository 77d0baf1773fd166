import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/*
 * Every metric the platform exports, in one place (docs/operations.md "Observability" lists them).
 * Labels are bounded: route templates, not URLs; kinds, statuses, codes and sources from fixed sets;
 * model and tool names through BoundedLabel; never an id. The `tenant` label exists only when
 * METRICS_TENANT_LABEL=true (labelNames are fixed when a metric is made).
 */

/** Seconds: an HTTP request or a tool call (1 ms to 1 min). */
const SHORT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds: a run or its first token (10 ms to 10 min). */
const RUN_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** What the gauges read when scraped (filled in by app.ts once the services exist); each is cheap. */
export interface GaugeSources {
  activeRuns?(): number;
  openStreams?(): number;
  /** PostgreSQL's pool: connections made, idle, and callers waiting for one. */
  pool?(): { total: number; idle: number; waiting: number };
  /** The SQLite WAL file's size in bytes (0 when absent). */
  walBytes?(): number;
  /** Task jobs queued and running, the oldest due queued job's age, tasks awaiting approval: one cheap query. */
  tasks?(): Promise<{ queued: number; running: number; lagSeconds: number; awaitingApproval: number }>;
  /** Tool calls waiting for a person's decision (all tenants, one count). */
  toolApprovals?(): Promise<number>;
  /** This process's model breakers (runtime/models/breaker.ts): each model called since it started. */
  breakers?(): { model: string; status: string; opened: number }[];
}

/** A breaker's status as the gauge's number: the higher, the less the model is tried. */
const BREAKER_STATE: Record<string, number> = { closed: 0, half_open: 1, open: 2 };

/** The provider and bounded name of a model id (`provider/name`): the labels of model metrics. */
type ModelLabels = (model: string) => { provider: string; model: string };

export function defineMetrics(registry: Registry, tenantLabel: boolean, sources: GaugeSources, modelLabels: ModelLabels) {
  const registers = [registry];
  const t = (names: string[]) => (tenantLabel ? [...names, 'tenant'] : names);
  // One query answers the three task gauges: a scrape collects them together and shares it.
  let taskStats: ReturnType<NonNullable<GaugeSources['tasks']>> | undefined;
  const readTasks = () => {
    if (!sources.tasks) return undefined;
    taskStats ??= sources.tasks().finally(() => {
      taskStats = undefined;
    });
    return taskStats;
  };
  return {
    // HTTP
    httpRequests: new Counter({
      name: 'agentry_http_requests_total',
      help: 'HTTP requests answered, by route template, method and status class',
      labelNames: ['route', 'method', 'status_class'],
      registers,
    }),
    httpDuration: new Histogram({
      name: 'agentry_http_request_duration_seconds',
      help: 'Time to answer an HTTP request (to the response head for streams), by route template, method and status class',
      labelNames: ['route', 'method', 'status_class'],
      buckets: SHORT_BUCKETS,
      registers,
    }),
    rejections: new Counter({
      name: 'agentry_rejections_total',
      help: 'Requests refused by a limit, by reason (rate_limited, concurrency_limit, budget_exceeded...)',
      labelNames: t(['reason']),
      registers,
    }),
    // Runs
    runsStarted: new Counter({
      name: 'agentry_runs_started_total',
      help: 'Runs started, by kind',
      labelNames: t(['kind']),
      registers,
    }),
    runsEnded: new Counter({
      name: 'agentry_runs_ended_total',
      help: 'Runs ended here, by kind and terminal status (completed, failed, cancelled)',
      labelNames: t(['kind', 'status']),
      registers,
    }),
    runDuration: new Histogram({
      name: 'agentry_run_duration_seconds',
      help: 'Run duration, start to terminal state, by kind and status',
      labelNames: ['kind', 'status'],
      buckets: RUN_BUCKETS,
      registers,
    }),
    timeToFirstToken: new Histogram({
      name: 'agentry_run_time_to_first_token_seconds',
      help: 'Time from a run’s start to its first streamed token, by kind',
      labelNames: ['kind'],
      buckets: RUN_BUCKETS,
      registers,
    }),
    runsActive: new Gauge({
      name: 'agentry_runs_active',
      help: 'Runs executing in this process',
      registers,
      collect() {
        if (sources.activeRuns) this.set(sources.activeRuns());
      },
    }),
    runsRecovered: new Counter({
      name: 'agentry_runs_recovered_total',
      help: 'Runs declared interrupted by this process after their lease expired (their process stopped)',
      registers,
    }),
    injections: new Counter({ name: 'agentry_run_injections_total', help: 'Messages injected into running runs', registers }),
    cancellations: new Counter({ name: 'agentry_run_cancellations_total', help: 'Runs cancelled on request', registers }),
    // Models
    modelSteps: new Counter({
      name: 'agentry_model_steps_total',
      help: 'Model steps (calls) of ended runs, by provider and model',
      labelNames: t(['provider', 'model']),
      registers,
    }),
    tokens: new Counter({
      name: 'agentry_model_tokens_total',
      help: 'Tokens of ended runs, by provider, model and direction (input, output)',
      labelNames: t(['provider', 'model', 'direction']),
      registers,
    }),
    knowledgeTokens: new Counter({
      name: 'agentry_knowledge_tokens_total',
      help: 'Tokens knowledge spent with providers, by kind (ingestion, query, rerank), provider, model and direction (input, output)',
      labelNames: t(['kind', 'provider', 'model', 'direction']),
      registers,
    }),
    cost: new Counter({
      name: 'agentry_model_cost_usd_total',
      help: 'Cost in USD of ended runs (the price table’s), by provider and model',
      labelNames: t(['provider', 'model']),
      registers,
    }),
    providerErrors: new Counter({
      name: 'agentry_model_provider_errors_total',
      help: 'Runs failed by their model provider, by the model that failed (a fallback when the step had reached it) and code',
      labelNames: ['provider', 'model', 'code'],
      registers,
    }),
    providerRetries: new Counter({
      name: 'agentry_model_provider_retries_total',
      help: 'Model calls retried after a provider failure, by the model asked and code',
      labelNames: ['provider', 'model', 'code'],
      registers,
    }),
    modelBreakerState: new Gauge({
      name: 'agentry_model_breaker_state',
      help: 'Each model’s circuit breaker in this process, by provider and model: 0 closed, 1 half-open (a probe may pass), 2 open (skipped)',
      labelNames: ['provider', 'model'],
      registers,
      collect() {
        if (!sources.breakers) return;
        // Models past the label bound share "other": it shows the worst of them.
        const worst = new Map<string, { labels: { provider: string; model: string }; value: number }>();
        for (const b of sources.breakers()) {
          const labels = modelLabels(b.model);
          const key = `${labels.provider}/${labels.model}`;
          const value = BREAKER_STATE[b.status] ?? 0;
          if ((worst.get(key)?.value ?? -1) < value) worst.set(key, { labels, value });
        }
        for (const { labels, value } of worst.values()) this.set(labels, value);
      },
    }),
    modelBreakerOpened: new Gauge({
      name: 'agentry_model_breaker_opened',
      help: 'Times each model’s circuit breaker opened since this process started (only grows; a restart starts it at 0), by provider and model',
      labelNames: ['provider', 'model'],
      registers,
      collect() {
        if (!sources.breakers) return;
        const sums = new Map<string, { labels: { provider: string; model: string }; value: number }>();
        for (const b of sources.breakers()) {
          const labels = modelLabels(b.model);
          const key = `${labels.provider}/${labels.model}`;
          const entry = sums.get(key) ?? { labels, value: 0 };
          entry.value += b.opened;
          sums.set(key, entry);
        }
        for (const { labels, value } of sums.values()) this.set(labels, value);
      },
    }),
    // Tools
    toolCalls: new Counter({
      name: 'agentry_tool_calls_total',
      help: 'Tool calls, by source (builtin, skill, mcp, delegation, a2a), name (bounded; "other" past the bound or for tenant-named tools) and outcome',
      labelNames: t(['source', 'name', 'outcome']),
      registers,
    }),
    toolDuration: new Histogram({
      name: 'agentry_tool_call_duration_seconds',
      help: 'Tool call duration, by source and name',
      labelNames: ['source', 'name'],
      buckets: SHORT_BUCKETS,
      registers,
    }),
    // Tasks
    taskJobs: new Gauge({
      name: 'agentry_task_jobs',
      help: 'Task jobs by state (queued: waiting for a worker; running)',
      labelNames: ['state'],
      registers,
      async collect() {
        const stats = await readTasks();
        if (!stats) return;
        this.set({ state: 'queued' }, stats.queued);
        this.set({ state: 'running' }, stats.running);
      },
    }),
    taskQueueLag: new Gauge({
      name: 'agentry_task_queue_lag_seconds',
      help: 'Age of the oldest due queued job (0 when none waits)',
      registers,
      async collect() {
        const stats = await readTasks();
        if (stats) this.set(stats.lagSeconds);
      },
    }),
    taskFires: new Counter({
      name: 'agentry_task_fires_total',
      help: 'Cron fires of tasks, by misfire policy and outcome (fired, misfired: a cron time found past the grace)',
      labelNames: ['policy', 'outcome'],
      registers,
    }),
    approvalsWaiting: new Gauge({
      name: 'agentry_approvals_waiting',
      help: 'Approvals waiting for a person, by kind (task: tasks awaiting approval; tool_call: tool calls of paused runs)',
      labelNames: ['kind'],
      registers,
      async collect() {
        const [stats, toolCalls] = await Promise.all([readTasks(), sources.toolApprovals?.()]);
        if (stats) this.set({ kind: 'task' }, stats.awaitingApproval);
        if (toolCalls !== undefined) this.set({ kind: 'tool_call' }, toolCalls);
      },
    }),
    // Streams
    sseOpen: new Gauge({
      name: 'agentry_sse_connections_open',
      help: 'Server-Sent Events connections open',
      registers,
      collect() {
        if (sources.openStreams) this.set(sources.openStreams());
      },
    }),
    eventsPublished: new Counter({
      name: 'agentry_run_events_published_total',
      help: 'Run events published by runs executing here, by event (token, tool_call_start, tool_call_end...)',
      labelNames: ['event'],
      registers,
    }),
    replays: new Counter({
      name: 'agentry_run_event_replays_total',
      help: 'Followers of a run’s events served from the database (a run executing elsewhere, or already ended)',
      registers,
    }),
    // Identity
    tokensIssued: new Counter({
      name: 'agentry_identity_tokens_issued_total',
      help: 'Tokens issued, by type',
      labelNames: t(['type']),
      registers,
    }),
    authorizeDecisions: new Counter({
      name: 'agentry_identity_authorize_decisions_total',
      help: 'Authorization decisions, by decision and reason',
      labelNames: t(['decision', 'reason']),
      registers,
    }),
    // Retention: the sweep of src/retention/ calls Metrics.retentionDeleted(table, rows)
    retentionDeleted: new Counter({
      name: 'agentry_retention_deleted_rows_total',
      help: 'Rows deleted by the retention sweep, by table',
      labelNames: ['table'],
      registers,
    }),
    // Database
    dbPoolConnections: new Gauge({
      name: 'agentry_db_pool_connections',
      help: 'PostgreSQL pool connections, by state (in_use, idle, waiting: callers waiting for one)',
      labelNames: ['state'],
      registers,
      collect() {
        if (!sources.pool) return;
        const p = sources.pool();
        this.set({ state: 'in_use' }, p.total - p.idle);
        this.set({ state: 'idle' }, p.idle);
        this.set({ state: 'waiting' }, p.waiting);
      },
    }),
    sqliteWalBytes: new Gauge({
      name: 'agentry_sqlite_wal_bytes',
      help: 'Size of the SQLite write-ahead log file',
      registers,
      collect() {
        if (sources.walBytes) this.set(sources.walBytes());
      },
    }),
  };
}

export type MetricDefinitions = ReturnType<typeof defineMetrics>;

/**
 * A label whose values come from outside (model names, tool names): the first `limit` distinct values
 * are kept, later ones become "other", so a tenant inventing names cannot grow the series without bound.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(private readonly limit: number) {}

  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.limit) return 'other';
    this.seen.add(value);
    return value;
  }
}
