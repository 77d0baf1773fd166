import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { openapiDocumentHooks } from './openapi-document.js';

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
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
}
