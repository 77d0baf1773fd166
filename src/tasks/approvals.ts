import type { Actor, Permission } from '../tenancy/permissions.js';

/**
 * Human-in-the-loop approvals, as other domains see them. The tasks domain implements it with
 * `awaiting_approval` tasks; the skills domain uses it for `skill_request` and `connector_request`.
 * Approving the task performs its action (one of the ApprovalActions the tasks domain is built with);
 * rejecting cancels it.
 */
export interface ApprovalGateway {
  /** Creates a task in `awaiting_approval` that, once approved, performs `action` with `payload`. */
  createApprovalTask(input: {
    tenantId: string;
    agentId: string;
    name: string;
    description: string;
    /** The action's name among the ApprovalActions, e.g. `skill.assign` or `connector.request`. */
    action: string;
    payload: Record<string, unknown>;
    requestedBy: Actor;
  }): Promise<{ taskId: string }>;
}

/** An action a task awaiting approval may carry, offered by another domain (skills) to the tasks domain when it is built. */
export interface ApprovalAction {
  /** What approving a task with this action does. */
  approved: ActionHandler;
  /** What rejecting does beyond cancelling the task (e.g. mark a request rejected). */
  rejected?: ActionHandler;
  /**
   * The permission deciding (approving or rejecting) a task with this action needs, besides the route's
   * own: the permission of what approving performs, so an approval never lets a credential do what it
   * could not do directly (docs/skills.md, "Decisions").
   */
  permission?: Permission;
}

/** The approval actions by name. */
export type ApprovalActions = Readonly<Record<string, ApprovalAction>>;

/** What approving (or rejecting) a task with an approval action does. */
export type ActionHandler = (input: {
  tenantId: string;
  taskId: string;
  payload: Record<string, unknown>;
  decidedBy: Actor;
}) => Promise<void>;
