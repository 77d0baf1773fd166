import type { FastifyPluginAsync } from 'fastify';
import type { Agent } from '../agents/schemas.js';
import type { MessageRuns } from '../conversations/service.js';
import { ToolRegistry } from '../runtime/tools/registry.js';
import type { ToolProvider } from '../runtime/tools/types.js';
import { dailyUsageRoutes } from './daily-usage/routes.js';
import { DailyUsageReport } from './daily-usage/service.js';
import { messageRuns } from './messages.js';
import { runsPlugin } from './plugin.js';
import type { RunsOptions } from './resources.js';
import { runRetention } from './retention.js';
import { RunsService } from './service.js';

export interface RunsDomainOptions extends Omit<RunsOptions, 'tools'> {
  /** Every run's tool providers by group name, in the order their tools are offered (tools of other domains among them). */
  toolProviders: Readonly<Record<string, ToolProvider<Agent>>>;
}

export interface RunsDomain {
  runs: RunsService;
  /** The registry assembling each run's tools from `toolProviders`. */
  tools: ToolRegistry<Agent>;
  /** The runs' routes, lease renewal and the recovery of runs whose process died. */
  plugin: FastifyPluginAsync;
  /** Runs, cost and tokens per day (GET /api/v1/usage/daily), the aggregate the console's usage page charts. */
  usagePlugin: FastifyPluginAsync;
  contributions: {
    /** A posted message starts a run (the conversations domain's port). */
    messageRuns: MessageRuns;
    /** What the retention sweep asks of runs: ended runs deleted (their tool approvals with them), events compacted. */
    retention: ReturnType<typeof runRetention>;
  };
}

/** Builds the runs domain: the run engine, with everything other domains add to a run given here. */
export function createRunsDomain({ toolProviders, ...options }: RunsDomainOptions): RunsDomain {
  const tools = new ToolRegistry<Agent>(toolProviders);
  const runs = new RunsService({ ...options, tools });
  const report = new DailyUsageReport(options.db);
  return {
    runs,
    tools,
    plugin: (app) => runsPlugin(app, { runs }),
    usagePlugin: async (app) => {
      await app.register(dailyUsageRoutes, { report });
    },
    contributions: {
      messageRuns: messageRuns(runs),
      retention: runRetention(options.db, {
        deleteOfRuns: async (trx, runIds) => options.toolApprovals?.().deleteOfRuns(trx, runIds),
      }),
    },
  };
}
