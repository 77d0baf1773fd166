import { AgentryError, errorFromResponse, retryAfterSeconds } from './errors.js';

/** An API key's OAuth client (`client_id` = the key's id, `client_secret` = the key), docs/identity.md. */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
  /** Space-separated permissions, a subset of the key's (default: all of them). */
  scope?: string;
}

export interface AgentryOptions {
  /** The server's origin, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** An API key (`agk_...`), sent as the bearer credential. */
  apiKey?: string;
  /** Access tokens from client_credentials, fetched when first needed and refreshed before they expire. */
  clientCredentials?: ClientCredentials;
  /** Any other source of bearer tokens (called before every request: cache in it). */
  accessToken?: () => string | Promise<string>;
  /** Retries of a 429 or 503 answer (default 3); no other status is retried. */
  maxRetries?: number;
  /** The longest wait before a retry (default 30 s): a longer Retry-After fails at once instead. */
  maxRetryDelayMs?: number;
  /** How the client waits between retries and reconnections (default: a timer). */
  wait?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

export interface RequestOptions {
  query?: object;
  body?: unknown;
  /** A multipart/form-data body (an upload); fetch writes its content type with the boundary. */
  form?: FormData;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** The options of a call that starts work (a run, a task). */
export interface StartOptions {
  /**
   * The call's Idempotency-Key (docs/runtime.md, "Streams and retries"). By default each call sends a new
   * one (a UUID), the same on each of its retries, so a retry answers what the first attempt started. An
   * `Idempotency-Key` header given in `headers` is used as well.
   */
  idempotencyKey?: string;
}

const IDEMPOTENCY_KEY = 'idempotency-key';
const keyIn = (headers: Record<string, string> | undefined) =>
  Object.keys(headers ?? {}).some((name) => name.toLowerCase() === IDEMPOTENCY_KEY);

/** Refresh this long before expiry, so a token is not used in its last seconds. */
const REFRESH_MARGIN_MS = 30_000;
const BASE_BACKOFF_MS = 500;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }
    function aborted() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });

/** Bearer tokens from the token endpoint, one request at a time, kept until shortly before expiry. */
class ClientCredentialsTokens {
  private token: { value: string; refreshAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly http: Http,
    private readonly credentials: ClientCredentials,
  ) {}

  get(): Promise<string> {
    if (this.token && Date.now() < this.token.refreshAt) return Promise.resolve(this.token.value);
    this.pending ??= this.fetchToken().finally(() => (this.pending = undefined));
    return this.pending;
  }

  /** Forgets a token the server refused (revoked), so the next request fetches another. */
  invalidate() {
    this.token = undefined;
  }

  private async fetchToken(): Promise<string> {
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: this.credentials.clientId,
      client_secret: this.credentials.clientSecret,
    });
    if (this.credentials.scope) form.set('scope', this.credentials.scope);
    const response = await this.http.send('POST', '/api/v1/identity/oauth/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      rawBody: form.toString(),
      anonymous: true,
    });
    const body = (await response.json()) as { access_token: string; expires_in: number };
    const lifetimeMs = body.expires_in * 1000;
    this.token = { value: body.access_token, refreshAt: Date.now() + Math.max(lifetimeMs / 2, lifetimeMs - REFRESH_MARGIN_MS) };
    return body.access_token;
  }
}

/** The transport: URL and query, bearer credential, problem errors, and retries of 429 and 503. */
export class Http {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly tokens: ClientCredentialsTokens | undefined;

  constructor(private readonly options: AgentryOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.tokens = options.clientCredentials ? new ClientCredentialsTokens(this, options.clientCredentials) : undefined;
    if (!options.apiKey && !options.clientCredentials && !options.accessToken)
      throw new TypeError('Agentry needs apiKey, clientCredentials or accessToken');
  }

  wait(ms: number, signal?: AbortSignal) {
    return (this.options.wait ?? sleep)(ms, signal);
  }

  private async credential(): Promise<string> {
    if (this.options.accessToken) return this.options.accessToken();
    if (this.tokens) return this.tokens.get();
    return this.options.apiKey!;
  }

  /**
   * The headers of one call that starts work: the caller's Idempotency-Key (the option, else a header),
   * else a new one. Computed once per call, they are sent again by each of its retries.
   */
  startHeaders(headers: Record<string, string> | undefined, options: StartOptions = {}): Record<string, string> {
    const result = { ...headers };
    if (options.idempotencyKey !== undefined) {
      for (const name of Object.keys(result)) if (name.toLowerCase() === IDEMPOTENCY_KEY) delete result[name];
      result[IDEMPOTENCY_KEY] = options.idempotencyKey;
    } else if (!keyIn(result) && !keyIn(this.options.headers)) {
      result[IDEMPOTENCY_KEY] = globalThis.crypto.randomUUID();
    }
    return result;
  }

  url(path: string, query?: object): string {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== null) params.set(name, String(value));
    const search = params.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ''}`;
  }

  /**
   * Sends a request and answers the successful response; a problem becomes an AgentryError. 429 and
   * 503 are retried after Retry-After (or RateLimit-Reset), else after an exponential backoff.
   */
  async send(method: string, path: string, options: RequestOptions & { rawBody?: string; anonymous?: boolean } = {}): Promise<Response> {
    const maxRetries = this.options.maxRetries ?? 3;
    const maxDelayMs = this.options.maxRetryDelayMs ?? 30_000;
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { accept: 'application/json', ...this.options.headers, ...options.headers };
      if (!options.anonymous) headers.authorization = `Bearer ${await this.credential()}`;
      let body: string | FormData | undefined = options.form ?? options.rawBody;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['content-type'] = 'application/json';
      }
      let response: Response;
      try {
        response = await this.fetchImpl(this.url(path, options.query), { method, headers, body, signal: options.signal });
      } catch (err) {
        if (options.signal?.aborted) throw options.signal.reason;
        throw new AgentryError({ status: 0, code: 'network_error', detail: err instanceof Error ? err.message : String(err), cause: err });
      }
      if (response.ok) return response;
      // A cached access token revoked or expired early: fetch another once.
      if (response.status === 401 && this.tokens && !options.anonymous && !refreshed) {
        refreshed = true;
        this.tokens.invalidate();
        await response.body?.cancel();
        continue;
      }
      if ((response.status === 429 || response.status === 503) && attempt < maxRetries) {
        const retryAfter = retryAfterSeconds(response.headers);
        const delayMs = retryAfter !== undefined ? retryAfter * 1000 : BASE_BACKOFF_MS * 2 ** attempt * (1 + Math.random() / 2);
        if (delayMs <= maxDelayMs) {
          await response.body?.cancel();
          await this.wait(delayMs, options.signal);
          continue;
        }
      }
      throw await errorFromResponse(response);
    }
  }

  /** A JSON call: the parsed body, or undefined for 204. */
  async json<T>(method: string, path: string, options?: RequestOptions): Promise<T> {
    const response = await this.send(method, path, options);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }
}
