import { isIP } from 'node:net';
import path from 'node:path';
import { inspect } from 'node:util';
import type { CodeLimits } from './code/sandbox/types.js';
import { trustDomainError } from './identity/spiffe.js';
import { parseModelId } from './runtime/models/model-id.js';
import type { ProviderSettings } from './runtime/models/registry.js';
import type { ModelEntryOverride } from './runtime/models/prices.js';
import { type TracingSettings, TracingSettingError, tracingSettings } from './tracing/settings.js';
import { DEFAULT_BREAKER_SETTINGS } from './runtime/models/breaker.js';
import { DEFAULT_RETRY_POLICY } from './runtime/models/retries.js';
import { DEFAULT_MODEL_TIMEOUTS, type ModelTimeouts } from './runtime/models/timeouts.js';

/** A secret value that never shows up in logs, JSON or `util.inspect` output. */
class Secret {
  readonly #value: Buffer;
  constructor(value: Buffer) {
    this.#value = value;
  }
  reveal(): Buffer {
    return this.#value;
  }
  toJSON() {
    return '[redacted]';
  }
  toString() {
    return '[redacted]';
  }
  [inspect.custom]() {
    return 'Secret([redacted])';
  }
}

/** Typed, validated configuration read from the environment once at start. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** `undefined` means the embedded SQLite file in `dataDir`. */
  databaseUrl: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  publicBaseUrl: string;
  defaultModel: string;
  providers: ProviderSettings;
  /** USD per million tokens and context windows, laid over the built-in table field by field (MODEL_PRICES, JSON). */
  modelPrices: Record<string, ModelEntryOverride>;
  /** How long a run's lease lasts without renewal before another process declares it interrupted. */
  runLeaseMs: number;
  /** Hosts (or host:port), as written in URLs, agents may reach although not public (MCP_ALLOWED_HOSTS). */
  mcpAllowedHosts: string[];
  /** Lets agents reach any address but the cloud metadata one (MCP_ALLOW_PRIVATE_NETWORKS=true); closed networks only. */
  mcpAllowPrivateNetworks: boolean;
  /** How long SIGTERM waits for running runs and streams before ending them. */
  shutdownGraceMs: number;
  /** How often an idle event stream gets a `: keep-alive` comment, so proxies keep it open (SSE_HEARTBEAT_SECONDS). */
  sseHeartbeatMs: number;
  /** How long a chat completion (/v1) waits for a person to decide a tool call its run waits on (OPENAI_APPROVAL_WAIT_SECONDS). */
  openaiApprovalWaitMs: number;
  /** Default requests per minute per API key (0: no limit) when neither key nor tenant sets one. */
  rateLimitPerMinute: number;
  /** Token endpoint requests per minute per client (0: no limit); 0 by default when rateLimitPerMinute is. */
  tokenRateLimitPerMinute: number;
  /**
   * Which reverse proxies' X-Forwarded-For is believed for the caller's address (the token endpoint's
   * per-address counts, logs): false, none; a number, that many hops; else the proxies' addresses or CIDRs.
   */
  trustProxy: false | number | string[];
  /** `iss` of every token the platform signs; defaults to `publicBaseUrl`. */
  issuer: string;
  /** SPIFFE trust domain of the agents' identities. */
  trustDomain: string;
  /** Key that encrypts private keys at rest; `undefined`: generated into `DATA_DIR/master.key`. */
  masterKey: Secret | undefined;
  /**
   * MASTER_KEY_RESET: start although the master key does not open the secrets the database holds (or is
   * missing), re-keying on purpose (identity/master-key-check.ts); default false: refuse to start.
   */
  masterKeyReset: boolean;
  tasks: TaskSettings;
  /** Between passes of the retention sweep (RETENTION_SWEEP_SECONDS, default 600; 0: this process does not sweep). */
  retentionSweepMs: number;
  /** OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT...; docs/operations.md "Traces"): off without an endpoint. */
  tracing: TracingSettings;
  metrics: MetricsSettings;
  /** The built web console served at `/` (CONSOLE_DIR; `off`: none); null when disabled. */
  consoleDir: string | null;
  code: CodeSettings;
  /** Reading knowledge documents (docs/knowledge.md, "Sizes and limits"): each in a worker thread with these bounds. */
  knowledgeReader: { timeoutMs: number; memoryMb: number };
  /** Knowledge searches ranked at once in this process, and how many may wait (docs/knowledge.md, "Sizes and limits"). */
  knowledgeSearch: { concurrency: number; queue: number; rerankTimeoutMs: number };
}

/** Sandboxed code execution (docs/code-execution.md). */
interface CodeSettings {
  /** CODE_EXECUTION=on|off; on (the default) still runs nothing where the sandbox cannot isolate. */
  enabled: boolean;
  /** Warm processes kept per language (CODE_POOL_SIZE, default 1; 0: every execution starts its own). */
  poolSize: number;
  /** Executions running at once in this process (CODE_MAX_CONCURRENT); more wait. */
  maxConcurrent: number;
  /** The server's maxima of every execution's limits (CODE_MAX_*): a tenant's limits lie within them. */
  maxima: CodeLimits;
}

/** Prometheus metrics (docs/operations.md "Observability"): off unless a token or a port is set. */
interface MetricsSettings {
  /** Bearer token of `GET /metrics` on the main port (METRICS_TOKEN); unset: that route answers 404. */
  token: Secret | undefined;
  /** A separate port serving only `/metrics`, without a token (METRICS_PORT); unset: none. */
  port: number | undefined;
  /** Where that port listens (METRICS_HOST, loopback by default: whoever reaches it reads the metrics). */
  host: string;
  /** Adds a `tenant` label to the run, model and tool metrics (METRICS_TENANT_LABEL): one series per tenant. */
  tenantLabel: boolean;
}

/** The task dispatcher and cron scheduler of this process (docs/scheduling.md). */
interface TaskSettings {
  /** Worker slots for dispatched task runs (TASK_WORKERS); 0: this process dispatches no tasks. */
  workers: number;
  /** How often the dispatcher and the cron scheduler look for due work (TASK_POLL_MS). */
  pollMs: number;
  /** Whether this process fires cron schedules (TASK_SCHEDULER=on|off); any number of replicas may. */
  scheduler: boolean;
  /** A cron time found later than this is a misfire (TASK_MISFIRE_GRACE_SECONDS). */
  misfireGraceMs: number;
}

/** Thrown for invalid configuration; `main` prints the message as one line and exits. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`invalid configuration: ${variable} ${message}`);
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

type Env = Record<string, string | undefined>;

/** The values a whole-number setting may take, both ends included. */
interface Range {
  min: number;
  max: number;
}

function integer(env: Env, name: string, fallback: number, { min, max }: Range): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** TRUST_PROXY: unset or false, a hop count, or addresses and CIDRs (never "true": anyone could then name any address). */
function trustedProxies(env: Env): false | number | string[] {
  const raw = env.TRUST_PROXY?.trim();
  if (!raw || raw === 'false' || raw === '0') return false;
  if (/^\d+$/.test(raw)) return integer(env, 'TRUST_PROXY', 0, { min: 1, max: 32 });
  const entries = raw.split(',').map((e) => e.trim());
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const maxBits = family === 6 ? 128 : 32;
    if (!family || extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= maxBits))) {
      throw new ConfigError('TRUST_PROXY', `must be a number of hops or addresses/CIDRs separated by commas, got "${entry}"`);
    }
  }
  return entries;
}

function url(env: Env, name: string, fallback: string, protocols: string[]): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be a URL, got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return raw;
}

/** Per-model timeouts (MODEL_TIMEOUTS, JSON), laid over the MODEL_*_TIMEOUT_MS defaults field by field. */
function modelTimeouts(env: Env): Record<string, Partial<ModelTimeouts>> {
  const raw = env.MODEL_TIMEOUTS;
  if (!raw) return {};
  const shape = '{"firstByteMs":<ms>,"idleMs":<ms>,"totalMs":<ms>} (any of them, 1 to 3600000)';
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('MODEL_TIMEOUTS', 'must be JSON like {"openai/gpt-4o":{"firstByteMs":120000}}');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError('MODEL_TIMEOUTS', 'must be a JSON object');
  for (const [model, entry] of Object.entries(parsed as Record<string, unknown>)) {
    const fields = entry && typeof entry === 'object' && !Array.isArray(entry) ? Object.entries(entry) : [];
    const ok =
      fields.length > 0 &&
      fields.every(
        ([k, v]) =>
          ['firstByteMs', 'idleMs', 'totalMs'].includes(k) && Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 3_600_000,
      );
    if (!ok) throw new ConfigError('MODEL_TIMEOUTS', `entry "${model}" must be ${shape}`);
  }
  return parsed as Record<string, Partial<ModelTimeouts>>;
}

function modelPrices(env: Env): Config['modelPrices'] {
  const raw = env.MODEL_PRICES;
  if (!raw) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('MODEL_PRICES', 'must be JSON like {"openai/gpt-4o":{"input":2.5,"output":10}}');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError('MODEL_PRICES', 'must be a JSON object');
  const shape = '{"input":<USD per 1M>,"output":<USD per 1M>,"contextWindow":<tokens>,"outputReserve":<tokens>} (any of them)';
  for (const [model, entry] of Object.entries(parsed as Record<string, unknown>)) {
    const fields = entry && typeof entry === 'object' && !Array.isArray(entry) ? Object.entries(entry) : [];
    const ok =
      fields.length > 0 &&
      fields.every(([k, v]) =>
        k === 'input' || k === 'output'
          ? typeof v === 'number' && v >= 0
          : (k === 'contextWindow' || k === 'outputReserve') && Number.isInteger(v) && (v as number) > 0,
      );
    if (!ok) throw new ConfigError('MODEL_PRICES', `entry "${model}" must be ${shape}`);
    const { contextWindow, outputReserve } = entry as ModelEntryOverride;
    if (contextWindow !== undefined && outputReserve !== undefined && outputReserve >= contextWindow) {
      throw new ConfigError('MODEL_PRICES', `entry "${model}": outputReserve must be smaller than contextWindow`);
    }
  }
  return parsed as Config['modelPrices'];
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 8080, { min: 0, max: 65535 });
  const host = env.HOST || '127.0.0.1';
  const dataDir = path.resolve(env.DATA_DIR || './data');

  const databaseUrl = env.DATABASE_URL ? url(env, 'DATABASE_URL', '', ['postgres:', 'postgresql:']) : undefined;

  const logLevel = (env.LOG_LEVEL || 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  }

  const displayHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const publicBaseUrl = url(env, 'PUBLIC_BASE_URL', `http://${displayHost}:${port}`, ['http:', 'https:']).replace(/\/+$/, '');

  const defaultModel = env.DEFAULT_MODEL || 'builtin/echo';
  const parsed = parseModelId(defaultModel);
  if (typeof parsed === 'string') throw new ConfigError('DEFAULT_MODEL', `${parsed}, got "${defaultModel}"`);

  const retry = {
    maxAttempts: integer(env, 'MODEL_RETRY_MAX_ATTEMPTS', DEFAULT_RETRY_POLICY.maxAttempts, { min: 1, max: 20 }),
    baseMs: integer(env, 'MODEL_RETRY_BASE_MS', DEFAULT_RETRY_POLICY.baseMs, { min: 0, max: 600_000 }),
    maxDelayMs: integer(env, 'MODEL_RETRY_MAX_DELAY_MS', DEFAULT_RETRY_POLICY.maxDelayMs, { min: 0, max: 3_600_000 }),
  };
  // A provider's own MAX_ATTEMPTS (OPENAI_RETRY_MAX_ATTEMPTS...) overrides the common one.
  const retryOf = (prefix: string) => ({
    ...retry,
    maxAttempts: integer(env, `${prefix}_RETRY_MAX_ATTEMPTS`, retry.maxAttempts, { min: 1, max: 20 }),
  });
  const providers: ProviderSettings = {
    openai: {
      apiKey: env.OPENAI_API_KEY || undefined,
      baseUrl: env.OPENAI_BASE_URL ? url(env, 'OPENAI_BASE_URL', '', ['http:', 'https:']) : undefined,
      retry: retryOf('OPENAI'),
    },
    anthropic: {
      apiKey: env.ANTHROPIC_API_KEY || undefined,
      baseUrl: env.ANTHROPIC_BASE_URL ? url(env, 'ANTHROPIC_BASE_URL', '', ['http:', 'https:']) : undefined,
      retry: retryOf('ANTHROPIC'),
    },
    openaiCompatible: {
      apiKey: env.OPENAI_COMPATIBLE_API_KEY || undefined,
      baseUrl: env.OPENAI_COMPATIBLE_BASE_URL ? url(env, 'OPENAI_COMPATIBLE_BASE_URL', '', ['http:', 'https:']) : undefined,
      retry: retryOf('OPENAI_COMPATIBLE'),
    },
    // A model skipped on a sustained failure rate of its calls, for a cool-down (docs/models.md "The breaker"); 0 failures: never.
    breaker: {
      minFailures: integer(env, 'MODEL_BREAKER_FAILURES', DEFAULT_BREAKER_SETTINGS.minFailures, { min: 0, max: 1000 }),
      failureRatePercent: integer(env, 'MODEL_BREAKER_FAILURE_RATE', DEFAULT_BREAKER_SETTINGS.failureRatePercent, { min: 1, max: 100 }),
      windowMs: integer(env, 'MODEL_BREAKER_WINDOW_MS', DEFAULT_BREAKER_SETTINGS.windowMs, { min: 1000, max: 3_600_000 }),
      coolDownMs: integer(env, 'MODEL_BREAKER_COOLDOWN_MS', DEFAULT_BREAKER_SETTINGS.coolDownMs, { min: 0, max: 3_600_000 }),
    },
    // How long a model call's attempt may take before it is a retryable provider_timeout (docs/models.md "Timeouts").
    timeouts: {
      defaults: {
        firstByteMs: integer(env, 'MODEL_FIRST_BYTE_TIMEOUT_MS', DEFAULT_MODEL_TIMEOUTS.firstByteMs, { min: 1, max: 3_600_000 }),
        idleMs: integer(env, 'MODEL_IDLE_TIMEOUT_MS', DEFAULT_MODEL_TIMEOUTS.idleMs, { min: 1, max: 3_600_000 }),
        totalMs: integer(env, 'MODEL_TOTAL_TIMEOUT_MS', DEFAULT_MODEL_TIMEOUTS.totalMs, { min: 1, max: 3_600_000 }),
      },
      models: modelTimeouts(env),
    },
  };

  const runLeaseMs = integer(env, 'RUN_LEASE_SECONDS', 30, { min: 2, max: 3600 }) * 1000;
  const mcpAllowedHosts = (env.MCP_ALLOWED_HOSTS ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const mcpAllowPrivateNetworks = boolean(env, 'MCP_ALLOW_PRIVATE_NETWORKS', false);
  const shutdownGraceMs = integer(env, 'SHUTDOWN_GRACE_SECONDS', 30, { min: 0, max: 3600 }) * 1000;
  const sseHeartbeatMs = integer(env, 'SSE_HEARTBEAT_SECONDS', 15, { min: 1, max: 3600 }) * 1000;
  // Below the official OpenAI clients' 10-minute timeout, after which they would retry (and start another run).
  const openaiApprovalWaitMs = integer(env, 'OPENAI_APPROVAL_WAIT_SECONDS', 300, { min: 1, max: 3600 }) * 1000;
  const rateLimitPerMinute = integer(env, 'RATE_LIMIT_PER_MINUTE', 6000, { min: 0, max: 10_000_000 });
  // Minting is a signature and a committed row; a client needs a token an hour (they live one hour).
  const tokenRateLimitPerMinute = integer(env, 'TOKEN_RATE_LIMIT_PER_MINUTE', rateLimitPerMinute === 0 ? 0 : 300, {
    min: 0,
    max: 10_000_000,
  });

  const trustProxy = trustedProxies(env);

  const issuer = url(env, 'ISSUER', publicBaseUrl, ['http:', 'https:']).replace(/\/+$/, '');

  const trustDomain = env.TRUST_DOMAIN || 'agentry.local';
  const tdError = trustDomainError(trustDomain);
  if (tdError) throw new ConfigError('TRUST_DOMAIN', `${tdError}, got "${trustDomain}"`);

  let masterKey: Secret | undefined;
  if (env.MASTER_KEY) {
    // The value itself never appears in the error: it is a secret even when malformed.
    const raw = env.MASTER_KEY.trim();
    const decoded = /^[A-Za-z0-9+/_-]+={0,2}$/.test(raw) ? Buffer.from(raw, 'base64') : Buffer.alloc(0);
    if (decoded.length !== 32) {
      throw new ConfigError('MASTER_KEY', 'must be the base64 encoding of exactly 32 random bytes (e.g. `openssl rand -base64 32`)');
    }
    masterKey = new Secret(decoded);
  }

  const scheduler = env.TASK_SCHEDULER || 'on';
  if (scheduler !== 'on' && scheduler !== 'off') throw new ConfigError('TASK_SCHEDULER', `must be on or off, got "${scheduler}"`);
  const tasks: TaskSettings = {
    workers: integer(env, 'TASK_WORKERS', 4, { min: 0, max: 256 }),
    pollMs: integer(env, 'TASK_POLL_MS', 1000, { min: 10, max: 60_000 }),
    scheduler: scheduler === 'on',
    misfireGraceMs: integer(env, 'TASK_MISFIRE_GRACE_SECONDS', 60, { min: 1, max: 86_400 }) * 1000,
  };

  const metricsToken = env.METRICS_TOKEN || undefined;
  // A guessable token would hand the metrics (run volumes, spend) to anyone.
  if (metricsToken !== undefined && metricsToken.length < 16) throw new ConfigError('METRICS_TOKEN', 'must be at least 16 characters long');
  const metrics: MetricsSettings = {
    token: metricsToken === undefined ? undefined : new Secret(Buffer.from(metricsToken)),
    port: env.METRICS_PORT ? integer(env, 'METRICS_PORT', 0, { min: 0, max: 65535 }) : undefined,
    host: env.METRICS_HOST || '127.0.0.1',
    tenantLabel: boolean(env, 'METRICS_TENANT_LABEL', false),
  };

  const codeExecution = env.CODE_EXECUTION || 'on';
  if (codeExecution !== 'on' && codeExecution !== 'off')
    throw new ConfigError('CODE_EXECUTION', `must be on or off, got "${codeExecution}"`);
  const code: CodeSettings = {
    enabled: codeExecution === 'on',
    // A warm Python process holds ~130 to 150 MB (docs/code-execution.md): one per language keeps an idle server light.
    poolSize: integer(env, 'CODE_POOL_SIZE', 1, { min: 0, max: 32 }),
    maxConcurrent: integer(env, 'CODE_MAX_CONCURRENT', 2, { min: 1, max: 256 }),
    maxima: {
      wallMs: integer(env, 'CODE_MAX_WALL_SECONDS', 60, { min: 1, max: 3600 }) * 1000,
      cpuMs: integer(env, 'CODE_MAX_CPU_SECONDS', 30, { min: 1, max: 3600 }) * 1000,
      memoryMb: integer(env, 'CODE_MAX_MEMORY_MB', 512, { min: 16, max: 3072 }),
      outputBytes: integer(env, 'CODE_MAX_OUTPUT_BYTES', 1024 * 1024, { min: 1024, max: 64 * 1024 * 1024 }),
      maxOutputFiles: integer(env, 'CODE_MAX_OUTPUT_FILES', 20, { min: 0, max: 1000 }),
      maxOutputFileBytes: integer(env, 'CODE_MAX_OUTPUT_FILE_BYTES', 10 * 1024 * 1024, { min: 1024, max: 256 * 1024 * 1024 }),
    },
  };

  let tracing: TracingSettings;
  try {
    tracing = tracingSettings(env);
  } catch (err) {
    if (err instanceof TracingSettingError) throw new ConfigError(err.variable, err.message);
    throw err;
  }

  return {
    port,
    host,
    dataDir,
    databaseUrl,
    logLevel,
    publicBaseUrl,
    defaultModel,
    providers,
    modelPrices: modelPrices(env),
    runLeaseMs,
    mcpAllowedHosts,
    mcpAllowPrivateNetworks,
    shutdownGraceMs,
    sseHeartbeatMs,
    openaiApprovalWaitMs,
    rateLimitPerMinute,
    tokenRateLimitPerMinute,
    trustProxy,
    issuer,
    trustDomain,
    masterKey,
    masterKeyReset: boolean(env, 'MASTER_KEY_RESET', false),
    tasks,
    retentionSweepMs: integer(env, 'RETENTION_SWEEP_SECONDS', 600, { min: 0, max: 86_400 }) * 1000,
    tracing,
    metrics,
    // packages/console/dist beside src/ or dist/ (this module's folder) unless CONSOLE_DIR says otherwise.
    consoleDir:
      env.CONSOLE_DIR === 'off'
        ? null
        : env.CONSOLE_DIR
          ? path.resolve(env.CONSOLE_DIR)
          : path.resolve(import.meta.dirname, '../packages/console/dist'),
    code,
    knowledgeReader: {
      timeoutMs: integer(env, 'KNOWLEDGE_READ_TIMEOUT_SECONDS', 120, { min: 1, max: 3600 }) * 1000,
      memoryMb: integer(env, 'KNOWLEDGE_READ_MEMORY_MB', 512, { min: 32, max: 8192 }),
    },
    knowledgeSearch: {
      concurrency: integer(env, 'KNOWLEDGE_SEARCH_CONCURRENCY', 4, { min: 1, max: 64 }),
      queue: integer(env, 'KNOWLEDGE_SEARCH_QUEUE', 64, { min: 0, max: 10_000 }),
      rerankTimeoutMs: integer(env, 'KNOWLEDGE_RERANK_TIMEOUT_MS', 30_000, { min: 100, max: 600_000 }),
    },
  };
}
