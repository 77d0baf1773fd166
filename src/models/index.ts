import type { FastifyPluginAsync } from 'fastify';
import { modelsRoutes } from './routes.js';
import { ModelCatalog, type ModelCatalogOptions } from './service.js';

export interface ModelsDomain {
  catalog: ModelCatalog;
  /** GET /api/v1/models, the console's model picker; nothing runs in the background. */
  plugin: FastifyPluginAsync;
}

/** Builds the models domain (docs/models.md): the models this server offers, read from runtime's registry and price table. */
export function createModelsDomain(options: ModelCatalogOptions): ModelsDomain {
  const catalog = new ModelCatalog(options);
  return {
    catalog,
    plugin: async (app) => {
      await app.register(modelsRoutes, { catalog });
    },
  };
}
