import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problems } from '../http/schemas.js';
import { ModelList } from './schemas.js';
import type { ModelCatalog } from './service.js';

/** GET /api/v1/models: the models this server is configured for, the console's model picker (docs/models.md). */
export const modelsRoutes: FastifyPluginAsyncTypebox<{ catalog: ModelCatalog }> = async (app, { catalog }) => {
  app.get(
    '/api/v1/models',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listServerModels',
        tags: ['agents'],
        summary: 'The models this server offers an agent: builtin/echo, priced models of the configured providers, DEFAULT_MODEL',
        description:
          'Each with whether it is usable now, its price and context window when the price table knows them. Not a limit: an agent may name any provider/model-name.',
        response: { 200: ModelList, ...problems(401, 403) },
      },
    },
    async () => catalog.list(),
  );
};
