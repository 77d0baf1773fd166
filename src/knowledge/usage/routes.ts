import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../../http/schemas.js';
import { MAX_REPORT_DAYS } from '../../report-period.js';
import type { KnowledgeUsage } from './service.js';

const Day = (description: string) => Type.String({ format: 'date', description, examples: ['2026-11-22'] });

const KnowledgeUsageRow = Type.Object({
  day: Type.String({ description: 'YYYY-MM-DD (UTC): the day the tokens were spent' }),
  knowledgeBaseId: Type.String(),
  kind: Type.Union([Type.Literal('ingestion'), Type.Literal('query'), Type.Literal('rerank')], {
    description: 'ingestion: a document’s chunks embedded; query: a search’s query embedded; rerank: candidates re-ranked by a chat model',
  }),
  model: Type.String(),
  calls: Type.Integer({ description: 'provider calls recorded (an ingestion counts once, however many batches it sent)' }),
  inputTokens: Type.Integer({ description: 'as the provider reported them' }),
  outputTokens: Type.Integer({ description: 'as the provider reported them (0 for embeddings)' }),
});

/** GET /api/v1/knowledge-usage: the tokens knowledge spent with providers, per day (docs/knowledge.md, "Usage"). */
export const knowledgeUsageRoutes: FastifyPluginAsyncTypebox<{ usage: KnowledgeUsage }> = async (app, { usage }) => {
  app.get(
    '/api/v1/knowledge-usage',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getKnowledgeUsage',
        tags: ['knowledge'],
        summary: 'Tokens knowledge spent with providers per day (UTC), knowledge base, kind and model',
        description:
          'Embedding at ingestion and search, and re-ranking; the built-in embedding spends no tokens and has no rows. ' +
          `Not counted in runs’ cost or budgets (docs/knowledge.md, "Usage"). At most ${MAX_REPORT_DAYS} days per report; by default the last 30 days up to today.`,
        querystring: Type.Object(
          {
            from: Type.Optional(Day('first day, included (default: 29 days before to)')),
            to: Type.Optional(Day('last day, included (default: today, UTC)')),
            runId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'only what this run’s knowledge_search spent' })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ from: Type.String(), to: Type.String(), rows: Type.Array(KnowledgeUsageRow) }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => usage.report(req.principal.tenantId, req.query),
  );
};
