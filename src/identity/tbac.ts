/**
 * Tool-Based Access Control: which agent (caller) may use which tool of which agent (callee).
 *
 * A policy matches a (caller, callee, tool) request when each of its three fields is `*` or equal,
 * and its conditions hold at decision time. Of the matching policies the most specific decides (more
 * exact fields beats fewer); between equally specific ones, deny wins. No match: the tenant's mode
 * decides (`audit`: allow and log; `enforce`: deny).
 */

export const WILDCARD = '*';
export type Effect = 'allow' | 'deny';
export type TbacMode = 'audit' | 'enforce';
export const TBAC_MODES: readonly TbacMode[] = ['audit', 'enforce'];
export const DEFAULT_TBAC_MODE: TbacMode = 'audit';

/**
 * Conditions of a policy, all optional, all must hold:
 * - `notBefore` / `notAfter`: ISO timestamps; the policy applies from / until then (its expiry);
 * - `timeWindow`: `{ start: "HH:MM", end: "HH:MM" }`, a daily window in UTC, start included, end
 *   excluded; a window whose end is before its start spans midnight (22:00 to 06:00).
 */
export interface Conditions {
  notBefore?: string;
  notAfter?: string;
  timeWindow?: { start: string; end: string };
}

export interface Policy {
  id: string;
  callerAgentId: string;
  calleeAgentId: string;
  toolName: string;
  effect: Effect;
  conditions: Conditions | null;
}

export type Reason = 'policy_allow' | 'policy_deny' | 'no_policy_audit_allow' | 'no_policy_enforce_deny';

/** A request TBAC decides: may `caller` use `tool` of `callee`? */
export interface ToolRequest {
  caller: string;
  callee: string;
  tool: string;
}

export interface Decision {
  allowed: boolean;
  reason: Reason;
  policyId: string | null;
}

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

function conditionsHold(conditions: Conditions | null, at: number): boolean {
  if (!conditions) return true;
  if (conditions.notBefore && at < Date.parse(conditions.notBefore)) return false;
  if (conditions.notAfter && at >= Date.parse(conditions.notAfter)) return false;
  if (conditions.timeWindow) {
    const d = new Date(at);
    const m = d.getUTCHours() * 60 + d.getUTCMinutes();
    const start = minutes(conditions.timeWindow.start);
    const end = minutes(conditions.timeWindow.end);
    const inside = start < end ? m >= start && m < end : m >= start || m < end;
    if (!inside) return false;
  }
  return true;
}

/** Why conditions are unusable (for a 400), or null. */
export function conditionsError(conditions: Conditions): { path: string; message: string } | null {
  if (conditions.notBefore && conditions.notAfter && Date.parse(conditions.notBefore) >= Date.parse(conditions.notAfter)) {
    return { path: 'body.conditions.notAfter', message: 'must be later than notBefore' };
  }
  if (conditions.timeWindow && conditions.timeWindow.start === conditions.timeWindow.end) {
    return { path: 'body.conditions.timeWindow.end', message: 'must differ from start' };
  }
  return null;
}

const specificity = (p: Policy) =>
  Number(p.callerAgentId !== WILDCARD) + Number(p.calleeAgentId !== WILDCARD) + Number(p.toolName !== WILDCARD);

const fieldMatches = (field: string, value: string) => field === WILDCARD || field === value;

/** The deciding policy among candidates for the request, or null when none matches. */
function decidingPolicy(policies: Policy[], { caller, callee, tool }: ToolRequest, at: number): Policy | null {
  let best: Policy | null = null;
  let bestScore = -1;
  for (const p of policies) {
    if (!fieldMatches(p.callerAgentId, caller) || !fieldMatches(p.calleeAgentId, callee) || !fieldMatches(p.toolName, tool)) continue;
    if (!conditionsHold(p.conditions, at)) continue;
    const score = specificity(p);
    if (score > bestScore || (score === bestScore && p.effect === 'deny' && best?.effect === 'allow')) {
      best = p;
      bestScore = score;
    }
  }
  return best;
}

export function decide(policies: Policy[], mode: TbacMode, request: ToolRequest, at: number): Decision {
  const p = decidingPolicy(policies, request, at);
  if (p) return { allowed: p.effect === 'allow', reason: p.effect === 'allow' ? 'policy_allow' : 'policy_deny', policyId: p.id };
  return mode === 'enforce'
    ? { allowed: false, reason: 'no_policy_enforce_deny', policyId: null }
    : { allowed: true, reason: 'no_policy_audit_allow', policyId: null };
}
