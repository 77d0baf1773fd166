import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import type { Agent } from '../agents/schemas.js';
import type { FilesService } from '../conversations/files.js';
import type { Db } from '../db/database.js';
import type { ProviderSettings } from '../runtime/models/registry.js';
import type { ToolProvider } from '../runtime/tools/types.js';
import type { SignalBus } from '../signals/bus.js';
import { DocumentReader, type ReaderLimits } from './documents/reader.js';
import { Embeddings } from './embeddings.js';
import { Ingestion } from './ingestion.js';
import { PgVector } from './pgvector.js';
import { knowledgePlugin } from './plugin.js';
import type { RerankModels } from './rerank.js';
import { KnowledgeSearch, type SearchLimits } from './search.js';
import { KnowledgeService } from './service.js';
import { type KnowledgeToolPolicies, knowledgeToolProvider } from './tools.js';
import { knowledgeUsageRoutes } from './usage/routes.js';
import { KnowledgeUsage, type UsageObserver } from './usage/service.js';

export interface KnowledgeDomainOptions {
  db: Db;
  /** Wakes every replica's ingestion when documents are queued. */
  bus: SignalBus;
  /** Documents uploaded through the files API are read from there (conversations). */
  files: FilesService;
  /** The providers' credentials, for embedding models (the same settings the model registry reads). */
  providers: ProviderSettings;
  /** Chat models, for a base's rerankModel (the runtime's model registry). */
  models: RerankModels;
  log: FastifyBaseLogger;
  /** The TBAC decision knowledge_search asks, as every tool does (identity's policies). */
  policies: KnowledgeToolPolicies;
  /** Ingestion's settings; the defaults when unset. */
  ingestion?: { workers?: number; leaseMs?: number; pollMs?: number; reader?: ReaderLimits };
  /** Searches ranked at once, and waiting (default 4 and 64), and how long a re-ranking may take. */
  search?: SearchLimits;
  /** Told of every token spend (the metrics). */
  usageObserver?: UsageObserver;
}

export interface KnowledgeDomain {
  knowledge: KnowledgeService;
  search: KnowledgeSearch;
  /** The routes of /api/v1/knowledge-bases; ingestion's workers start and stop with the app. */
  plugin: FastifyPluginAsync;
  contributions: {
    /** knowledge_search, for agents that list the `knowledge` group. */
    toolProviders: { knowledge: ToolProvider<Agent> };
    /** What the retention sweep asks of knowledge: usage rows older than the tenant's runsDays deleted, in batches. */
    retention: { deleteUsageBefore(tenantId: string, cutoff: string, limit: number): Promise<number> };
  };
}

/** Builds the knowledge domain: knowledge bases, documents ingested in the background, search (docs/knowledge.md). */
export function createKnowledgeDomain({
  db,
  bus,
  files,
  providers,
  models,
  log,
  policies,
  ingestion: settings = {},
  search: searchLimits,
  usageObserver,
}: KnowledgeDomainOptions): KnowledgeDomain {
  const embeddings = new Embeddings(providers);
  const usage = new KnowledgeUsage(db, log, usageObserver);
  const pgvector = new PgVector(db, log);
  const ingestion = new Ingestion({
    db,
    bus,
    embeddings,
    usage,
    pgvector,
    log,
    workers: settings.workers ?? 2,
    reader: new DocumentReader(settings.reader ?? { timeoutMs: 120_000, memoryMb: 512 }),
    leaseMs: settings.leaseMs ?? 30_000,
    // A lapsed lease is noticed by polling (no process is left to signal it): within a third of a lease.
    pollMs: settings.pollMs ?? Math.min(2_000, (settings.leaseMs ?? 30_000) / 3),
  });
  const knowledge = new KnowledgeService({ db, files, embeddings, rerankModels: models, queued: ingestion.queued });
  const search = new KnowledgeSearch(db, knowledge, embeddings, models, usage, pgvector, searchLimits);
  return {
    knowledge,
    search,
    plugin: async (app) => {
      await knowledgePlugin(app, { knowledge, search, ingestion, pgvector });
      await app.register(knowledgeUsageRoutes, { usage });
    },
    contributions: {
      toolProviders: { knowledge: knowledgeToolProvider({ knowledge, search, policies }) },
      retention: { deleteUsageBefore: (tenantId, cutoff, limit) => usage.deleteRecordedBefore(tenantId, cutoff, limit) },
    },
  };
}
