import type { FieldError } from '@agentry/client';

/*
 * The limits the API's request schemas state for what the console's forms send, checked before a form
 * posts so that a breach is said at once and nothing is sent. The SDK's types carry no limits, so
 * they are written here once; test/console/form-limits.test.ts holds each equal to the server's
 * OpenAPI document (GET /openapi.json).
 */

export interface TextLimit {
  minLength?: number;
  maxLength?: number;
  /** The schema's pattern, as the server states it. */
  pattern?: string;
  /** An http(s) URL (format uri, pattern ^https?://). */
  url?: boolean;
}

export interface NumberLimit {
  minimum: number;
  maximum: number;
}

const AGENT_ID_OR_ANY = { minLength: 1, maxLength: 64, pattern: '^(\\*|[A-Za-z0-9_-]+)$' };

/** Per request body (operation), per field: the path its errors carry is `body.<field>` (row fields: see agent-form.ts). */
export const LIMITS = {
  createAgent: {
    name: { minLength: 1, maxLength: 200 },
    appId: { minLength: 1, maxLength: 128 },
    description: { maxLength: 5000 },
    model: { minLength: 3, maxLength: 200 },
    systemPrompt: { maxLength: 100_000 },
  },
  mcpTool: { url: { maxLength: 2048, pattern: '^https?://', url: true }, name: { pattern: '^[a-zA-Z0-9_-]{1,32}$' } },
  agentTool: { name: { pattern: '^[a-zA-Z0-9_-]{1,64}$' }, description: { maxLength: 2000 } },
  a2aTool: {
    name: { pattern: '^[a-zA-Z0-9_-]{1,60}$' },
    cardUrl: { maxLength: 2048, pattern: '^https?://', url: true },
    description: { maxLength: 2000 },
    credential: { minLength: 1, maxLength: 8192 },
  },
  createTask: {
    name: { minLength: 1, maxLength: 200 },
    description: { minLength: 1, maxLength: 100_000 },
    schedule: { minLength: 1, maxLength: 128 },
    timezone: { minLength: 1, maxLength: 64 },
  },
  createApiKey: { name: { minLength: 1, maxLength: 200 } },
  // A number's range: the skill form's input keeps its value inside it.
  assignSkill: { priority: { minimum: -1_000_000, maximum: 1_000_000 } },
  createPolicy: {
    callerAgentId: AGENT_ID_OR_ANY,
    calleeAgentId: AGENT_ID_OR_ANY,
    toolName: { pattern: '^(\\*|[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127})$' },
    description: { maxLength: 1000 },
  },
} satisfies Record<string, Record<string, TextLimit | NumberLimit>>;

/** What is wrong with `value` under `limit`, in the server's words where it has them; null when nothing is. */
export function checkText(value: string, limit: TextLimit): string | null {
  // Characters as the server counts them (JSON Schema counts code points).
  const length = [...value].length;
  if (limit.minLength !== undefined && length < limit.minLength) {
    return limit.minLength === 1 ? 'is required' : `must have at least ${limit.minLength} characters`;
  }
  if (limit.maxLength !== undefined && length > limit.maxLength) return `must have at most ${limit.maxLength} characters (has ${length})`;
  if (limit.url) {
    if (!/^https?:\/\//i.test(value)) return 'must be a URL starting with https:// or http://';
    if (!URL.canParse(value)) return 'is not a valid URL';
  }
  if (limit.pattern && !new RegExp(limit.pattern).test(value)) return `must match ${limit.pattern}`;
  return null;
}

/**
 * The breaches among `values` (fields that are not text, or left out, are not checked), as the server's
 * field errors would name them (`body.name`), so the form places them the same way.
 */
export function checkFields(values: object, limits: Record<string, TextLimit>, prefix = 'body'): FieldError[] {
  const out: FieldError[] = [];
  for (const [field, limit] of Object.entries(limits)) {
    const value = (values as Record<string, unknown>)[field];
    if (typeof value !== 'string') continue;
    const message = checkText(value, limit);
    if (message) out.push({ path: `${prefix}.${field}`, message });
  }
  return out;
}
