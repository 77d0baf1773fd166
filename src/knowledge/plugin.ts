import type { FastifyPluginAsync } from 'fastify';
import type { Ingestion } from './ingestion.js';
import type { PgVector } from './pgvector.js';
import { knowledgeRoutes } from './routes.js';
import type { KnowledgeSearch } from './search.js';
import type { KnowledgeService } from './service.js';

export interface KnowledgePluginOptions {
  knowledge: KnowledgeService;
  search: KnowledgeSearch;
  ingestion: Ingestion;
  pgvector: PgVector;
}

/**
 * The knowledge routes, and ingestion's workers: started when the app is ready, stopped when it closes.
 * pgvector's upkeep starts once the server listens, in the background: startup does not wait for it.
 */
export const knowledgePlugin: FastifyPluginAsync<KnowledgePluginOptions> = async (app, { knowledge, search, ingestion, pgvector }) => {
  await app.register(knowledgeRoutes, { knowledge, search });
  app.addHook('onReady', async () => ingestion.start());
  app.addHook('onListen', async () => pgvector.start());
  app.addHook('onClose', async () => {
    await pgvector.stop();
    await ingestion.stop();
  });
};
