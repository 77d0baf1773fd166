import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { openapiDocumentHooks } from './openapi-document.js';

/** The /docs page's CSP: its own scripts and styles, and "Try it out" calls to this origin and the public base URL. */
const docsCsp = (publicBaseUrl: string) =>
  [
    "default-src 'self'",
    "script-src 'self'",
    "script-src-attr 'none'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self' ${new URL(publicBaseUrl).origin}`,
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');

export interface OpenApiOptions {
  /** The server the document names. */
  publicBaseUrl: string;
}

/**
 * The API's OpenAPI document (/openapi.json) and its interactive page (/docs), both public.
 *
 * Registered on the root, not as an encapsulated plugin: @fastify/swagger collects routes through an
 * onRoute hook of the scope it is added to, and must see every domain's. Call it before any route and
 * before registerAuth, which reads the public mark this puts on the page's routes as each is declared.
 */
export async function registerOpenApi(app: FastifyInstance, { publicBaseUrl }: OpenApiOptions) {
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...(route.config ?? {}), public: true };
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agentry',
        version: '0.1.0',
        description:
          'Self-hosted, multi-tenant platform that hosts AI agents. Errors are RFC 9457 problem details, except on the OpenAI-compatible /v1 routes (OpenAI’s error shape; docs/clients.md).',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: publicBaseUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key (agk_...) or OAuth access token' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}` },
    // What the route schemas cannot say: operation names, problem and stream media types, examples.
    ...openapiDocumentHooks(),
  });
  // The page shares the console's origin, so it gets the console's protections: a CSP allowing only its
  // own scripts (Swagger UI styles elements inline), no framing, no sniffing. Its own scope: /docs only.
  await app.register(async (docs) => {
    docs.addHook('onSend', (_request, reply, _payload, done) => {
      reply.header('x-frame-options', 'DENY').header('referrer-policy', 'no-referrer');
      done();
    });
    await docs.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true }, staticCSP: docsCsp(publicBaseUrl) });
  });

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
}
