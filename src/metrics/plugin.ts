import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { BudgetExceeded, LimitExceeded } from '../errors.js';
import { ProblemError, notFound, unauthorized } from '../http/errors.js';
import type { Metrics } from './registry.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The separate metrics port's address once listening (METRICS_PORT), else null. */
    metricsAddress: () => AddressInfo | null;
  }
}

export interface MetricsOptions {
  metrics: Metrics | undefined;
  /** The bearer token of `/metrics` on the main port (METRICS_TOKEN); undefined: that route answers 404. */
  token: Buffer | undefined;
  /** A separate port serving `/metrics` without a token (METRICS_PORT), on `host`. */
  port: number | undefined;
  host: string;
}

const sha256 = (value: Buffer | string) => createHash('sha256').update(value).digest();

/**
 * Metrics in the app: every answered request counted by route template (onResponse), refusals by a
 * limit counted by their code (onError), `GET /metrics` on the main port behind METRICS_TOKEN, and the
 * separate METRICS_PORT server started and stopped with the app. Registered on the root, before the
 * domains, so its hooks see every route.
 */
export function registerMetrics(app: FastifyInstance, options: MetricsOptions) {
  const { metrics } = options;
  let server: http.Server | undefined;
  app.decorate('metricsAddress', () => (server?.address() as AddressInfo | null) ?? null);
  if (metrics) {
    // Plain callbacks: no promise per request.
    app.addHook('onResponse', (request, reply, done) => {
      metrics.request(request.routeOptions.url, request.method, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
    app.addHook('onError', (request, _reply, error, done) => {
      if (error instanceof LimitExceeded || error instanceof BudgetExceeded || (error instanceof ProblemError && error.status === 429)) {
        metrics.rejected(error.code, request.principal?.tenantId);
      } else if ((error as { status?: unknown }).status === 429) {
        // The token endpoint's own limit (an OAuth error, slow_down): its code is not a problem's.
        metrics.rejected('token_rate_limited', request.principal?.tenantId);
      }
      done();
    });
  }

  // Hashes compared, so the comparison takes as long whatever the given token's length.
  const expected = options.token ? sha256(options.token) : undefined;
  app.get(
    '/metrics',
    // The Prometheus text format, read by a scraper with its own token (not an API key): outside the API's document, as /openapi.json is.
    { config: { public: true }, schema: { hide: true } },
    async (request, reply) => {
      if (!metrics || !expected) throw notFound('route');
      const header = request.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice(7) : '';
      if (!given || !timingSafeEqual(sha256(given), expected)) {
        throw unauthorized('send Authorization: Bearer <METRICS_TOKEN>', given ? 'invalid_credentials' : 'missing_credentials');
      }
      const text = await metrics.text();
      return reply.type(metrics.contentType).send(text);
    },
  );

  if (metrics && options.port !== undefined) {
    const port = options.port;
    app.addHook('onReady', async () => {
      server = http.createServer((req, res) => {
        const path = (req.url ?? '').split('?')[0];
        if (req.method !== 'GET' || path !== '/metrics') {
          res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
          return;
        }
        metrics.text().then(
          (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
          (err: unknown) => {
            app.log.error({ err }, 'collecting metrics failed');
            res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('collecting metrics failed\n');
          },
        );
      });
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen({ port, host: options.host }, () => {
          server!.off('error', reject);
          resolve();
        });
      });
      app.log.info({ address: server.address() }, 'metrics listening');
    });
    app.addHook('onClose', async () => {
      if (!server) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    });
  }
}
