import type { FastifyPluginAsync } from 'fastify';
import type { ToolApprovalRequests } from '../runs/approval-requests.js';
import type { RunFinishedListener } from '../runs/service.js';
import { approvalsPlugin } from './plugin.js';
import { type ApprovalsOptions, ApprovalsService } from './service.js';

export interface ApprovalsDomain {
  approvals: ApprovalsService;
  /** The inbox's routes, and while the server runs the sweep expiring approvals and resuming decided runs. */
  plugin: FastifyPluginAsync;
  contributions: {
    /** Where runs record tool calls that wait for a person and take their decisions. */
    toolApprovals: ToolApprovalRequests;
    /** A run that ends while its calls wait leaves nothing to decide (a finished listener of runs). */
    runFinished: RunFinishedListener;
  };
}

/** Builds the approvals domain: tool calls that wait for a person, and the one inbox with tasks awaiting approval. */
export function createApprovalsDomain(options: ApprovalsOptions): ApprovalsDomain {
  const approvals = new ApprovalsService(options);
  return {
    approvals,
    plugin: (app) => approvalsPlugin(app, { approvals }),
    contributions: { toolApprovals: approvals, runFinished: (run) => approvals.runFinished(run) },
  };
}
