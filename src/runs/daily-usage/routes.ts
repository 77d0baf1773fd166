import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../../http/schemas.js';
import { MAX_REPORT_DAYS } from '../../report-period.js';
import type { DailyUsageReport } from './service.js';

const Day = (description: string) => Type.String({ format: 'date', description, examples: ['2026-11-22'] });

const DailyUsageRow = Type.Object({
  day: Type.String({ description: 'YYYY-MM-DD (UTC): the day the runs were created' }),
  agentId: Type.String(),
  model: Type.String(),
  status: Type.String({ description: 'queued, running, awaiting_approval, completed, failed, cancelled' }),
  runs: Type.Integer(),
  costUsd: Type.Number({ description: 'USD' }),
  inputTokens: Type.Integer(),
  outputTokens: Type.Integer(),
});

/** GET /api/v1/usage/daily: the aggregate the console's usage page charts (docs/console.md). */
export const dailyUsageRoutes: FastifyPluginAsyncTypebox<{ report: DailyUsageReport }> = async (app, { report }) => {
  app.get(
    '/api/v1/usage/daily',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getDailyUsage',
        tags: ['runs'],
        summary: 'Runs, cost and tokens per day (UTC), agent, model and status',
        description: `Days without runs have no rows. At most ${MAX_REPORT_DAYS} days per report; by default the last 30 days up to today.`,
        querystring: Type.Object(
          {
            from: Type.Optional(Day('first day, included (default: 29 days before to)')),
            to: Type.Optional(Day('last day, included (default: today, UTC)')),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ from: Type.String(), to: Type.String(), rows: Type.Array(DailyUsageRow) }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => report.report(req.principal.tenantId, req.query),
  );
};
