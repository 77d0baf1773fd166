import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { IdParams, problems } from '../http/schemas.js';
import { ApprovalItem, ApproveBody, ListApprovalsQuery, RejectBody } from './schemas.js';
import type { ApprovalsService } from './service.js';

const tags = ['approvals'];
/**
 * Deciding needs agents:write, and never an agent's own token (no agentScope): an agent does not approve its own calls.
 * A task whose approval performs an action needs that action's permission too (tasks/approval-tasks.ts).
 */
const DECIDE_PERMISSION = 'agents:write';

/** The approvals inbox: GET /api/v1/approvals, GET /api/v1/approvals/:id, POST /api/v1/approvals/:id/approve|reject. */
export const approvalsRoutes: FastifyPluginAsyncTypebox<{ approvals: ApprovalsService }> = async (app, { approvals }) => {
  app.get(
    '/api/v1/approvals',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'listApprovals',
        tags,
        summary: 'The approvals inbox: tool calls and tasks waiting for a person (or decided, by status), newest first',
        querystring: ListApprovalsQuery,
        response: {
          200: Type.Object({ approvals: Type.Array(ApprovalItem), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => approvals.list(req.principal.tenantId, req.query),
  );

  app.get(
    '/api/v1/approvals/:id',
    {
      config: { permission: 'agents:read' },
      schema: {
        operationId: 'getApproval',
        tags,
        summary: 'One approval: a tool call (any status) or a task awaiting approval',
        params: IdParams,
        response: { 200: ApprovalItem, ...problems(401, 403, 404) },
      },
    },
    async (req) => approvals.get(req.principal.tenantId, req.params.id),
  );

  app.post(
    '/api/v1/approvals/:id/approve',
    {
      config: { permission: DECIDE_PERMISSION },
      schema: {
        operationId: 'approveApproval',
        tags,
        summary: 'Approve a waiting tool call (optionally with edited arguments) or a task; the run resumes',
        description:
          'An agent’s skill or connector request (a task) also needs the permission of what approving performs (skills:write, settings:write; else 403). ' +
          'The run resumes once none of its calls waits any more, on this server or (after a restart) on whichever claims it first. ' +
          '409 `approval_not_pending` when it was decided, expired or its run ended; 409 `approval_expired` when its time is up ' +
          '(the sweep then decides it as the agent’s `approval.onTimeout` says).',
        params: IdParams,
        body: ApproveBody,
        response: { 200: ApprovalItem, ...problems(400, 401, 403, 404, 409) },
      },
    },
    async (req) => approvals.approve(req.principal, req.params.id, req.body, req.trace),
  );

  app.post(
    '/api/v1/approvals/:id/reject',
    {
      config: { permission: DECIDE_PERMISSION },
      schema: {
        operationId: 'rejectApproval',
        tags,
        summary: 'Reject a waiting tool call (the model is told the reason as the tool’s result and goes on) or a task',
        description: '409 `approval_not_pending` when it was decided or its run ended; 409 `approval_expired` when its time is up.',
        params: IdParams,
        body: RejectBody,
        response: { 200: ApprovalItem, ...problems(400, 401, 403, 404, 409) },
      },
    },
    async (req) => approvals.reject(req.principal, req.params.id, req.body.reason, req.trace),
  );
};
