import createClient, { type Client, defaultPathSerializer } from 'openapi-fetch';
import type { paths } from './generated/openapi.js';
import { refuseDotSegments } from './path.js';
import {
  anonymousRequests,
  authMiddleware,
  errorMiddleware,
  idempotencyMiddleware,
  type MiddlewareConfig,
  retryMiddleware,
} from './middleware.js';

/** An API key's OAuth client (`client_id` = the key's id, `client_secret` = the key), docs/identity.md. */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
  /** Space-separated permissions, a subset of the key's (default: all of them). */
  scope?: string;
}

export interface AgentryOptions {
  /** The server's origin, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** An API key (`agk_...`), sent as the bearer credential. */
  apiKey?: string;
  /** Access tokens from client_credentials, fetched when first needed and refreshed before they expire. */
  clientCredentials?: ClientCredentials;
  /** Any other source of bearer tokens (called before every request: cache in it). */
  accessToken?: () => string | Promise<string>;
  /**
   * Retries (default 3) of a 429 answer, and of a 503 or a network failure of an idempotent request
   * (GET, PUT, DELETE) or one carrying an Idempotency-Key; nothing else is retried.
   */
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

/** A Request as fetch's (url, init) arguments: a form's body as bytes (its boundary is in the headers), any other as text. */
async function initOf(request: Request): Promise<RequestInit> {
  const multipart = request.headers.get('content-type')?.startsWith('multipart/');
  const body = request.body === null ? undefined : multipart ? await request.blob() : await request.text();
  return { method: request.method, headers: Object.fromEntries(request.headers), body, signal: request.signal, redirect: request.redirect };
}

/** Bearer tokens from the token endpoint, one request at a time, kept until shortly before expiry. */
class ClientCredentialsTokens {
  private token: { value: string; refreshAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly api: Client<paths>,
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
    const { data } = await this.api.POST('/api/v1/identity/oauth/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: {
        grant_type: 'client_credentials',
        client_id: this.credentials.clientId,
        client_secret: this.credentials.clientSecret,
        ...(this.credentials.scope ? { scope: this.credentials.scope } : {}),
      },
    });
    const body = data as { access_token: string; expires_in: number };
    const lifetimeMs = body.expires_in * 1000;
    this.token = { value: body.access_token, refreshAt: Date.now() + Math.max(lifetimeMs / 2, lifetimeMs - REFRESH_MARGIN_MS) };
    return body.access_token;
  }
}

/**
 * The transport: `api`, the openapi-fetch client typed by the generated paths, with the middleware
 * (middleware.ts) for the bearer credential, Idempotency-Keys, retries and AgentryErrors; and `send` /
 * `json`, the same client by a concrete path for callers that build the path themselves.
 */
export class Http {
  readonly baseUrl: string;
  readonly api: Client<paths>;
  private readonly tokens: ClientCredentialsTokens | undefined;

  constructor(private readonly options: AgentryOptions) {
    if (!options.apiKey && !options.clientCredentials && !options.accessToken)
      throw new TypeError('Agentry needs apiKey, clientCredentials or accessToken');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    const fetchImpl = options.fetch;
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      // The `fetch` option is called as fetch(url, init), as before openapi-fetch; the global one is
      // looked up at each call, so a fetch patched later is the one used.
      fetch: async (request) => (fetchImpl ?? globalThis.fetch)(request.url, await initOf(request)),
      headers: { accept: 'application/json', ...options.headers },
      // Every URL sent, by template or built with seg() (send() gives it a path): thrown here, it is the call's rejection.
      pathSerializer: (url, params) => {
        const serialized = defaultPathSerializer(url, params);
        refuseDotSegments(serialized);
        return serialized;
      },
    });
    this.tokens = options.clientCredentials ? new ClientCredentialsTokens(this.api, options.clientCredentials) : undefined;
    const config: MiddlewareConfig = {
      credential: () => this.credential(),
      invalidateToken: () => {
        this.tokens?.invalidate();
        return this.tokens !== undefined;
      },
      wait: (ms, signal) => this.wait(ms, signal),
      maxRetries: options.maxRetries ?? 3,
      maxRetryDelayMs: options.maxRetryDelayMs ?? 30_000,
    };
    // The order matters: retries keep a copy of the request as the others left it.
    this.api.use(authMiddleware(config), idempotencyMiddleware(), errorMiddleware(), retryMiddleware(config));
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
   * Sends a request by its concrete path through `api` (so through its middleware) and answers the
   * successful response unread; a failure is an AgentryError.
   */
  async send(method: string, path: string, options: RequestOptions & { rawBody?: string; anonymous?: boolean } = {}): Promise<Response> {
    // An empty `path`, so the path serializer (the dot-segment check) sees this concrete path too.
    const params = { path: {}, query: options.query as Record<string, unknown> | undefined };
    if (options.anonymous) anonymousRequests.add(params);
    const body = options.form ?? options.rawBody ?? options.body;
    const { response } = await (this.api.request as (method: string, path: string, init: object) => Promise<{ response: Response }>)(
      method,
      path,
      {
        params,
        body,
        headers: options.headers,
        signal: options.signal,
        parseAs: 'stream',
        // A form or a raw body goes as it is; anything else as JSON.
        bodySerializer: (value: unknown) => (options.body !== undefined ? JSON.stringify(value) : value),
      },
    );
    return response;
  }

  /** A JSON call: the parsed body, or undefined for 204. */
  async json<T>(method: string, path: string, options?: RequestOptions): Promise<T> {
    const response = await this.send(method, path, options);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }
}
