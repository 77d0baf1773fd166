import type { ActionHandler, ApprovalActions } from '../tasks/approvals.js';
import { CONNECTOR_REQUEST_ACTION, SKILL_ASSIGN_ACTION, type SkillTools } from './tools.js';

const text = (payload: Record<string, unknown>, key: string) => (typeof payload[key] === 'string' ? (payload[key] as string) : undefined);

/**
 * The approval actions of `skill_request` and `connector_request` (the skills domain's contribution to
 * the tasks domain, given when it is built): deciding their `awaiting_approval` tasks performs the request:
 *
 * - `skill.assign` approved: the skill is assigned to the agent (acquired from the store first when the
 *   request named a store skill; a disabled assignment is enabled), `assignedBy` = the approver;
 * - `connector.request` approved: the request is recorded `accepted`; rejected: `rejected`.
 *   (Connecting the integration still needs its credentials, given by an administrator.)
 *
 * Deciding needs the permission of what approving does: acquiring and assigning skills is skills:write
 * (as on the skills API), accepting a connector request is settings:write (as connecting one is).
 */
export function skillApprovalActions(tools: SkillTools): ApprovalActions {
  const decide =
    (status: 'accepted' | 'rejected'): ActionHandler =>
    async ({ tenantId, taskId, payload, decidedBy }) => {
      const requestId = text(payload, 'requestId');
      if (!requestId) throw new Error(`task ${taskId}: the connector request has no id`);
      await tools.connectors.decideRequest({ tenantId, actor: decidedBy }, requestId, status);
    };
  return {
    [SKILL_ASSIGN_ACTION]: {
      approved: async ({ tenantId, taskId, payload, decidedBy }) => {
        const agentId = text(payload, 'agentId');
        if (!agentId) throw new Error(`task ${taskId}: the skill request names no agent`);
        await tools.skills.grant(
          { tenantId, actor: decidedBy },
          { agentId, skillId: text(payload, 'skillId'), storeId: text(payload, 'storeId'), taskId },
        );
      },
      permission: 'skills:write',
    },
    [CONNECTOR_REQUEST_ACTION]: { approved: decide('accepted'), rejected: decide('rejected'), permission: 'settings:write' },
  };
}
