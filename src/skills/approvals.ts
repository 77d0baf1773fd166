import type { ApprovalGateway } from '../tasks/approvals.js';
import { CONNECTOR_REQUEST_ACTION, SKILL_ASSIGN_ACTION, type SkillTools } from './tools.js';

const text = (payload: Record<string, unknown>, key: string) => (typeof payload[key] === 'string' ? (payload[key] as string) : undefined);

/**
 * Wires the skills domain to the approval gateway (the tasks domain), in one call at start-up:
 * `skill_request` and `connector_request` then create `awaiting_approval` tasks, and deciding them
 * performs the request:
 *
 * - `skill.assign` approved: the skill is assigned to the agent (acquired from the store first when the
 *   request named a store skill; a disabled assignment is enabled), `assignedBy` = the approver;
 * - `connector.request` approved: the request is recorded `accepted`; rejected: `rejected`.
 *   (Connecting the integration still needs its credentials, given by an administrator.)
 */
export function registerSkillApprovalHandlers(gateway: ApprovalGateway, tools: SkillTools) {
  tools.useApprovals(gateway);

  gateway.onApproved(SKILL_ASSIGN_ACTION, async ({ tenantId, taskId, payload, decidedBy }) => {
    const agentId = text(payload, 'agentId');
    if (!agentId) throw new Error(`task ${taskId}: the skill request names no agent`);
    await tools.skills.grant(
      { tenantId, actor: decidedBy },
      { agentId, skillId: text(payload, 'skillId'), storeId: text(payload, 'storeId'), taskId },
    );
  });

  const decide =
    (status: 'accepted' | 'rejected') =>
    async ({ tenantId, taskId, payload, decidedBy }: Parameters<Parameters<ApprovalGateway['onApproved']>[1]>[0]) => {
      const requestId = text(payload, 'requestId');
      if (!requestId) throw new Error(`task ${taskId}: the connector request has no id`);
      await tools.connectors.decideRequest({ tenantId, actor: decidedBy }, requestId, status);
    };
  gateway.onApproved(CONNECTOR_REQUEST_ACTION, decide('accepted'));
  gateway.onRejected(CONNECTOR_REQUEST_ACTION, decide('rejected'));

  // Deciding needs the permission of what approving does: acquiring and assigning skills is skills:write
  // (as on the skills API), accepting a connector request is settings:write (as connecting one is).
  gateway.requirePermission(SKILL_ASSIGN_ACTION, 'skills:write');
  gateway.requirePermission(CONNECTOR_REQUEST_ACTION, 'settings:write');
}
