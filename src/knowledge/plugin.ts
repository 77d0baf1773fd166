import type { FastifyPluginAsync } from 'fastify';
import type { Ingestion } from './ingestion.js';
import { knowledgeRoutes } from './routes.js';
import type { KnowledgeSearch } from './search.js';
import type { KnowledgeService } from './service.js';

export interface KnowledgePluginOptions {
  knowledge: KnowledgeService;
  search: KnowledgeSearch;
  ingestion: Ingestion;
}

/** The knowledge routes, and ingestion's workers: started when the app is ready, stopped when it closes. */
export const knowledgePlugin: FastifyPluginAsync<KnowledgePluginOptions> = async (app, { knowledge, search, ingestion }) => {
  await app.register(knowledgeRoutes, { knowledge, search });
  app.addHook('onReady', async () => ingestion.start());
  app.addHook('onClose', () => ingestion.stop());
};
