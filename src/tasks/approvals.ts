import type { Actor, Permission } from '../tenancy/permissions.js';

/**
 * Human-in-the-loop approvals, as other domains see them. The tasks domain implements it with
 * `awaiting_approval` tasks; the skills domain uses it for `skill_request` and `connector_request`.
 * Approving the task performs the action through the handler registered for it; rejecting cancels it.
 */
export interface ApprovalGateway {
  /** Creates a task in `awaiting_approval` that, once approved, performs `action` with `payload`. */
  createApprovalTask(input: {
    tenantId: string;
    agentId: string;
    name: string;
    description: string;
    /** Registered action name, e.g. `skill.assign` or `connector.request`. */
    action: string;
    payload: Record<string, unknown>;
    requestedBy: Actor;
  }): Promise<{ taskId: string }>;

  /** Registers what approving a task with this action does; called once at start-up per action. */
  onApproved(action: string, handler: ActionHandler): void;

  /** Optional: what rejecting does beyond cancelling the task (e.g. mark a request rejected). */
  onRejected(action: string, handler: ActionHandler): void;

  /**
   * The permission deciding (approving or rejecting) a task with this action needs, besides the route's
   * own: the permission of what approving performs, so an approval never lets a credential do what it
   * could not do directly (docs/skills.md, "Decisions").
   */
  requirePermission(action: string, permission: Permission): void;
}

/** What approving (or rejecting) a task with a registered action does. */
export type ActionHandler = (input: {
  tenantId: string;
  taskId: string;
  payload: Record<string, unknown>;
  decidedBy: Actor;
}) => Promise<void>;
