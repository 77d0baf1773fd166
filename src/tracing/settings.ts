/**
 * The tracing settings (docs/operations.md, "Traces"), read from the standard OpenTelemetry variables
 * through config.ts, so an app built from an explicit environment (the tests start several in one
 * process) traces as that environment says rather than as process.env does.
 */
export interface TracingSettings {
  /** Where spans go over OTLP/HTTP (JSON); undefined: tracing is off and costs nothing. */
  endpoint: string | undefined;
  /** Headers of the export requests (an auth token of the collector, say): never logged. */
  headers: { reveal(): Record<string, string> };
  /** service.name of the resource (OTEL_SERVICE_NAME). */
  serviceName: string;
  /** Further resource attributes (OTEL_RESOURCE_ATTRIBUTES: key=value,key=value). */
  resourceAttributes: Record<string, string>;
  /** Prompt, completion and tool-call text on spans (OTEL_GENAI_CAPTURE_CONTENT=true); off by default. */
  captureContent: boolean;
  /** Every database statement as a child span (OTEL_AGENTRY_DB_SPANS=true): a debug setting. */
  dbSpans: boolean;
}

/** Export headers that say `[redacted]` when the configuration is printed or serialized. */
class ExportHeaders {
  readonly #values: Record<string, string>;
  constructor(values: Record<string, string>) {
    this.#values = values;
  }
  reveal(): Record<string, string> {
    return { ...this.#values };
  }
  toJSON() {
    return '[redacted]';
  }
  toString() {
    return '[redacted]';
  }
}

type Env = Record<string, string | undefined>;

/** A malformed tracing variable; config.ts turns it into its ConfigError. */
export class TracingSettingError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
  }
}

/** `key=value,key=value` with percent-encoded values (the OTel form of OTEL_*_HEADERS and OTEL_RESOURCE_ATTRIBUTES). */
function keyValues(env: Env, name: string): Record<string, string> {
  const raw = env[name];
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (const pair of raw.split(',')) {
    if (!pair.trim()) continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new TracingSettingError(name, 'must be a list of key=value pairs separated by commas');
    try {
      out[decodeURIComponent(pair.slice(0, eq).trim())] = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      throw new TracingSettingError(name, 'holds a malformed percent-encoding');
    }
  }
  return out;
}

function flag(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return false;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new TracingSettingError(name, `must be true or false, got "${raw}"`);
}

function httpUrl(name: string, raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new TracingSettingError(name, 'must be a URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new TracingSettingError(name, 'must start with http:// or https://');
  return raw;
}

/**
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the traces URL as is; OTEL_EXPORTER_OTLP_ENDPOINT is the
 * collector's base, `/v1/traces` appended (the OTLP/HTTP specification's rule). OTEL_SDK_DISABLED or
 * OTEL_TRACES_EXPORTER=none turn tracing off whatever the endpoint.
 */
export function tracingSettings(env: Env): TracingSettings {
  let endpoint: string | undefined;
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    endpoint = httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  else if (env.OTEL_EXPORTER_OTLP_ENDPOINT)
    endpoint = `${httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', env.OTEL_EXPORTER_OTLP_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  if (flag(env, 'OTEL_SDK_DISABLED') || env.OTEL_TRACES_EXPORTER === 'none') endpoint = undefined;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (endpoint && protocol && protocol !== 'http/json')
    throw new TracingSettingError(
      env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL',
      `must be http/json (the protocol Agentry exports), got "${protocol}"`,
    );
  return {
    endpoint,
    headers: new ExportHeaders({ ...keyValues(env, 'OTEL_EXPORTER_OTLP_HEADERS'), ...keyValues(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS') }),
    serviceName: env.OTEL_SERVICE_NAME || 'agentry',
    resourceAttributes: keyValues(env, 'OTEL_RESOURCE_ATTRIBUTES'),
    captureContent: flag(env, 'OTEL_GENAI_CAPTURE_CONTENT'),
    dbSpans: flag(env, 'OTEL_AGENTRY_DB_SPANS'),
  };
}
