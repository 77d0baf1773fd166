import { AgentryError, type TbacPolicy } from '@agentry/client';

/**
 * A TBAC policy's conditions in the console: the form's draft (what the inputs hold), what the API is
 * sent, and whether they hold at a moment, read the way the server decides (src/identity/tbac.ts;
 * test/console/conditions.test.ts holds the two together). Every time is UTC, as the server's are.
 */

export type Conditions = NonNullable<TbacPolicy['conditions']>;

/** The form's inputs: datetime-local values (`YYYY-MM-DDTHH:MM`, read as UTC) and times (`HH:MM`). */
export interface ConditionsDraft {
  notBefore: string;
  notAfter: string;
  windowStart: string;
  windowEnd: string;
}

export const emptyConditionsDraft: ConditionsDraft = { notBefore: '', notAfter: '', windowStart: '', windowEnd: '' };

/** A stored timestamp as a datetime-local input shows it, in UTC. */
const toInput = (iso: string | undefined) => (iso ? new Date(iso).toISOString().slice(0, 16) : '');
/** A datetime-local value read as UTC; the input lets through only well-formed values (or nothing). */
const fromInput = (value: string) => `${value}:00.000Z`;

export function draftOf(conditions: Conditions | null | undefined): ConditionsDraft {
  return {
    notBefore: toInput(conditions?.notBefore),
    notAfter: toInput(conditions?.notAfter),
    windowStart: conditions?.timeWindow?.start ?? '',
    windowEnd: conditions?.timeWindow?.end ?? '',
  };
}

/**
 * What the API is sent: null when every input is empty (no conditions; on an edit, clears them). A
 * window with one end only is sent as it is, so the server's 400 names the missing field.
 */
export function conditionsOf(draft: ConditionsDraft): Conditions | null {
  const out: Conditions = {};
  if (draft.notBefore) out.notBefore = fromInput(draft.notBefore);
  if (draft.notAfter) out.notAfter = fromInput(draft.notAfter);
  if (draft.windowStart || draft.windowEnd) {
    const window: Partial<NonNullable<Conditions['timeWindow']>> = {};
    if (draft.windowStart) window.start = draft.windowStart;
    if (draft.windowEnd) window.end = draft.windowEnd;
    out.timeWindow = window as NonNullable<Conditions['timeWindow']>;
  }
  return Object.keys(out).length ? out : null;
}

/** The draft's inputs a 400 names (`body.conditions.timeWindow.end`...), with the server's message. */
export function conditionErrorsOf(err: unknown): Partial<Record<keyof ConditionsDraft | 'conditions', string>> {
  const out: Partial<Record<keyof ConditionsDraft | 'conditions', string>> = {};
  if (!(err instanceof AgentryError)) return out;
  const inputs: Record<string, keyof ConditionsDraft> = {
    notBefore: 'notBefore',
    notAfter: 'notAfter',
    'timeWindow.start': 'windowStart',
    'timeWindow.end': 'windowEnd',
    timeWindow: 'windowStart',
  };
  for (const e of err.errors ?? []) {
    const path = e.path.replace(/^\/+/, '').replace(/\//g, '.');
    const m = /^body\.conditions(?:\.(.*))?$/.exec(path);
    if (!m) continue;
    const input = m[1] ? inputs[m[1]] : undefined;
    // Every error of an input is shown, one per line, not only the first.
    const key = input ?? 'conditions';
    out[key] = out[key] ? `${out[key]}\n${e.message}` : e.message;
  }
  return out;
}

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
const utc = (iso: string) => `${new Date(iso).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** Why the conditions do not hold at `at` (ms), in words; null when they hold (or there are none). */
export function whyNotHolding(conditions: Conditions | null | undefined, at: number): string | null {
  if (!conditions) return null;
  if (conditions.notBefore && at < Date.parse(conditions.notBefore)) return `not before ${utc(conditions.notBefore)}`;
  if (conditions.notAfter && at >= Date.parse(conditions.notAfter)) return `expired at ${utc(conditions.notAfter)}`;
  if (conditions.timeWindow) {
    const d = new Date(at);
    const m = d.getUTCHours() * 60 + d.getUTCMinutes();
    const start = minutes(conditions.timeWindow.start);
    const end = minutes(conditions.timeWindow.end);
    // A window whose end comes before its start spans midnight.
    const inside = start < end ? m >= start && m < end : m >= start || m < end;
    if (!inside) return `outside its daily window ${conditions.timeWindow.start}–${conditions.timeWindow.end} UTC`;
  }
  return null;
}

export const conditionsHold = (conditions: Conditions | null | undefined, at: number) => whyNotHolding(conditions, at) === null;

/** The conditions in one line, for the policies' table. */
export function describeConditions(conditions: Conditions | null | undefined): string {
  if (!conditions) return '';
  const parts: string[] = [];
  if (conditions.notBefore) parts.push(`from ${utc(conditions.notBefore)}`);
  if (conditions.notAfter) parts.push(`until ${utc(conditions.notAfter)}`);
  if (conditions.timeWindow) parts.push(`daily ${conditions.timeWindow.start}–${conditions.timeWindow.end} UTC`);
  return parts.join(', ');
}

/** The policies that could decide (caller, callee, tool): each field `*` or equal, conditions aside. */
export function candidatePolicies(policies: TbacPolicy[], caller: string, callee: string, tool: string): TbacPolicy[] {
  const matches = (field: string, value: string) => field === '*' || field === value;
  return policies.filter((p) => matches(p.callerAgentId, caller) && matches(p.calleeAgentId, callee) && matches(p.toolName, tool));
}
