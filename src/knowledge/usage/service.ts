import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { newId, now } from '../../ids.js';
import { reportPeriod } from '../../report-period.js';
import { dailyKnowledgeUsage, deleteUsageBefore, insertUsage, type KnowledgeUsageRow, type UsageKind } from './store.js';

/**
 * Tokens knowledge spends with providers (docs/knowledge.md, "Usage"): a document's chunks embedded at
 * ingestion, a search's query embedded, its candidates re-ranked. Recorded per call site with the
 * provider's own count; the built-in embedding spends none and is not recorded.
 */

export interface Spend {
  tenantId: string;
  knowledgeBaseId: string;
  kind: UsageKind;
  model: string;
  inputTokens: number;
  outputTokens: number;
  /** The document whose ingestion spent them. */
  documentId?: string;
  /** The run whose knowledge_search spent them. */
  runId?: string;
}

/** Told of each spend recorded (the metrics' token counter); knowledge imports nothing of metrics. */
export type UsageObserver = (spend: Spend) => void;

export class KnowledgeUsage {
  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    private readonly observer?: UsageObserver,
  ) {}

  /**
   * Records a spend. The tokens were spent whatever happens next, so a failure to write them is
   * logged rather than failing the search or ingestion that spent them.
   */
  async record(spend: Spend): Promise<void> {
    this.observer?.(spend);
    try {
      await insertUsage(this.db.kysely, {
        id: newId(),
        tenant_id: spend.tenantId,
        knowledge_base_id: spend.knowledgeBaseId,
        document_id: spend.documentId ?? null,
        run_id: spend.runId ?? null,
        kind: spend.kind,
        model: spend.model,
        input_tokens: spend.inputTokens,
        output_tokens: spend.outputTokens,
        created_at: now(),
      });
    } catch (err) {
      this.log.error({ err, spend }, 'could not record knowledge token usage');
    }
  }

  async report(
    tenantId: string,
    query: { from?: string; to?: string; runId?: string },
  ): Promise<{ from: string; to: string; rows: KnowledgeUsageRow[] }> {
    const { from, to, start, end } = reportPeriod(query);
    const rows = await dailyKnowledgeUsage(this.db.kysely, {
      tenantId,
      from: start,
      to: end,
      runId: query.runId,
    });
    return { from, to, rows };
  }

  /**
   * The retention sweep's batch (retention/sweep.ts): up to `limit` of the tenant's rows recorded before
   * `cutoff`. They follow runsDays, as the runs' usage report does (docs/operations.md, "Retention").
   */
  deleteRecordedBefore(tenantId: string, cutoff: string, limit: number): Promise<number> {
    return deleteUsageBefore(this.db.kysely, tenantId, cutoff, limit);
  }
}
