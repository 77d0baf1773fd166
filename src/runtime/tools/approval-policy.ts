import { Type, type Static } from 'typebox';
import { type LinearRegExp, linearRegExp, unusablePattern } from '../linear-regexp.js';

/**
 * Which tool calls wait for a person (docs/runtime.md, "Tool calls that wait for approval"): an agent's
 * `configuration.approval` lists rules over the names the model sees (built-in, skill, MCP, delegation
 * and A2A tools alike) and, TBAC-style, conditions on the call's arguments. A call matching any rule
 * waits; a rule without conditions matches every call of its tools (`always`).
 */

const ApprovalCondition = Type.Object(
  {
    argument: Type.String({
      minLength: 1,
      maxLength: 200,
      pattern: '^[^.]+(\\.[^.]+)*$',
      description: 'the argument, a dot path into the call’s input (e.g. amount, recipient.email)',
    }),
    operator: Type.Union(
      [
        Type.Literal('equals'),
        Type.Literal('not_equals'),
        Type.Literal('in'),
        Type.Literal('matches'),
        Type.Literal('gt'),
        Type.Literal('gte'),
        Type.Literal('lt'),
        Type.Literal('lte'),
        Type.Literal('exists'),
      ],
      {
        description:
          'matches: a regular expression (RE2 syntax: no backreferences nor lookaround; at most 200 characters); exists: the argument is present',
      },
    ),
    value: Type.Optional(Type.Unknown({ description: 'what the argument is compared with (an array for in); not for exists' })),
  },
  { additionalProperties: false },
);

const ApprovalRule = Type.Object(
  {
    tool: Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: '^[a-zA-Z0-9_*?-]+$',
      description: 'tool name the model sees; * and ? are wildcards (a2a_*, mcp_delete_*)',
    }),
    when: Type.Optional(
      Type.Array(ApprovalCondition, {
        maxItems: 16,
        description: 'all must hold for the call to wait; none: every call of the tool waits',
      }),
    ),
    reason: Type.Optional(Type.String({ maxLength: 500, description: 'shown to the approver; default: names the rule' })),
  },
  { additionalProperties: false },
);

export const ApprovalPolicy = Type.Object(
  {
    rules: Type.Array(ApprovalRule, { maxItems: 32 }),
    timeoutSeconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 30 * 86_400, default: 86_400, description: 'how long a call waits; then onTimeout decides' }),
    ),
    onTimeout: Type.Optional(
      Type.Union([Type.Literal('reject'), Type.Literal('approve')], { default: 'reject', description: 'what an expired approval becomes' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'tool calls that wait for a person before they run (approve or reject in /api/v1/approvals)',
  },
);
export type ApprovalPolicy = Static<typeof ApprovalPolicy>;

export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 86_400;

/** Why a call waits for approval, or undefined when it may run at once. */
export type ApprovalCheck = (call: { name: string; input: unknown }) => string | undefined;

/** A tool glob on the linear-time engine: `a*a*a*...b` backtracks polynomially on JavaScript's. */
function globRegExp(pattern: string): LinearRegExp {
  const body = pattern.replace(/[-]/g, '\\-').replace(/\*/g, '.*').replace(/\?/g, '.');
  return linearRegExp(`^${body}$`);
}

/**
 * A `matches` pattern compiled once per run. One stored before the engine's rule that RE2 cannot run
 * holds for every value: the call waits for a person rather than running unchecked.
 */
function matcher(pattern: unknown): LinearRegExp {
  try {
    return linearRegExp(String(pattern));
  } catch {
    return { test: () => true };
  }
}

function argumentAt(input: unknown, path: string): { found: boolean; value: unknown } {
  let value: unknown = input;
  for (const key of path.split('.')) {
    if (!value || typeof value !== 'object' || !Object.hasOwn(value, key)) return { found: false, value: undefined };
    value = (value as Record<string, unknown>)[key];
  }
  return { found: true, value };
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function holds(c: Static<typeof ApprovalCondition> & { pattern?: LinearRegExp }, input: unknown): boolean {
  const { found, value } = argumentAt(input, c.argument);
  switch (c.operator) {
    case 'exists':
      return found;
    case 'equals':
      return found && sameJson(value, c.value);
    case 'not_equals':
      return !found || !sameJson(value, c.value);
    case 'in':
      return found && Array.isArray(c.value) && c.value.some((v) => sameJson(v, value));
    case 'matches':
      return found && typeof value === 'string' && typeof c.value === 'string' && (c.pattern ?? matcher(c.value)).test(value);
    default: {
      if (!found || typeof value !== 'number' || typeof c.value !== 'number') return false;
      if (c.operator === 'gt') return value > c.value;
      if (c.operator === 'gte') return value >= c.value;
      if (c.operator === 'lt') return value < c.value;
      return value <= c.value;
    }
  }
}

/** A policy's rules compiled once per run. */
export function approvalCheck(policy: ApprovalPolicy | undefined): ApprovalCheck | undefined {
  if (!policy?.rules.length) return undefined;
  const rules = policy.rules.map((r) => ({
    ...r,
    name: globRegExp(r.tool),
    when: r.when?.map((c) => (c.operator === 'matches' ? { ...c, pattern: matcher(c.value) } : c)),
  }));
  return (call) => {
    for (const rule of rules) {
      if (!rule.name.test(call.name)) continue;
      if ((rule.when ?? []).every((c) => holds(c, call.input))) {
        return (
          rule.reason ?? (rule.when?.length ? `${call.name} with these arguments needs approval` : `${call.name} always needs approval`)
        );
      }
    }
    return undefined;
  };
}

/** A policy's `matches` patterns that are not regular expressions (a 400 naming them is better than a run failing later). */
export function invalidPatterns(policy: ApprovalPolicy): { path: string; message: string }[] {
  const errors: { path: string; message: string }[] = [];
  for (const [i, rule] of policy.rules.entries()) {
    for (const [j, c] of (rule.when ?? []).entries()) {
      if (c.operator !== 'matches') continue;
      const path = `rules.${i}.when.${j}.value`;
      if (typeof c.value !== 'string' || c.value.length > 200) {
        errors.push({ path, message: 'must be a pattern of at most 200 characters' });
        continue;
      }
      const unusable = unusablePattern(c.value);
      if (unusable) errors.push({ path, message: `is not a regular expression the server runs: ${unusable}` });
    }
  }
  return errors;
}
