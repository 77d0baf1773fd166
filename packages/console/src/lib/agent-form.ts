import type { Agent, Agentry, FieldError } from '@agentry/client';
import { addMessage, innerPath, segmentsOf } from './form-errors.js';
import { checkFields, LIMITS } from './form-limits.js';

/*
 * The agent form's logic, apart from its controls: an agent split into the form's sections (built-in
 * tool groups, MCP server rows, delegation rows, remote A2A agent rows, fallback and summary models,
 * skill rows), the request body put back together, the server's 400 field errors routed to the row and
 * field they name, and the skill assignments to add, change or remove.
 */

export const BUILTIN_GROUPS = ['skills', 'connectors', 'memory', 'code', 'knowledge'] as const;
type BuiltinGroup = (typeof BUILTIN_GROUPS)[number];

/** The server's defaults for an agent created without tools (agents/schemas.ts DEFAULT_TOOLS). */
const DEFAULT_GROUPS: BuiltinGroup[] = ['skills', 'connectors'];

interface HeaderRow {
  key: string;
  name: string;
  value: string;
}

export interface McpRow {
  key: string;
  url: string;
  name: string;
  allowedTools: string[];
  headers: HeaderRow[];
}

/** A delegation: another agent of the tenant as a tool. */
export interface DelegationRow {
  key: string;
  agentId: string | null;
  name: string;
  description: string;
}

/** A remote A2A agent as a tool; its credential comes back sealed (v1.…), and sending that back keeps it. */
export interface A2aRow {
  key: string;
  name: string;
  cardUrl: string;
  description: string;
  credential: string;
}

export interface SkillRow {
  key: string;
  skillId: string | null;
  priority: number | string;
}

export interface AgentFormValues {
  name: string;
  appId: string;
  description: string;
  model: string;
  systemPrompt: string;
  builtins: string[];
  /** The knowledge bases the knowledge group searches, as the agent has them (absent: every base of the tenant). */
  knowledgeBases?: string[];
  mcp: McpRow[];
  delegations: DelegationRow[];
  a2a: A2aRow[];
  fallbackModels: string[];
  summaryModel: string;
  /** The rest of the configuration, as JSON. */
  configuration: string;
  skills: SkillRow[];
  /** The skills assigned when the form was filled: only those a save may unassign (not ones assigned since). */
  loadedSkills: string[];
}

/** A skill assigned to the agent (GET /api/skills/agent/{agentId}), as much of it as the form reads. */
type AgentSkill = Awaited<ReturnType<Agentry['skills']['forAgent']>>['skills'][number];
export type AssignedSkill = Pick<AgentSkill, 'id'> & { assignment: Pick<AgentSkill['assignment'], 'priority'> };

let counter = 0;
/** A key for a new row, so React keeps each row's inputs when another is removed. */
export const rowKey = () => `row-${++counter}`;

export const emptyMcpRow = (): McpRow => ({ key: rowKey(), url: '', name: '', allowedTools: [], headers: [] });
export const emptySkillRow = (): SkillRow => ({ key: rowKey(), skillId: null, priority: 0 });
export const emptyDelegationRow = (): DelegationRow => ({ key: rowKey(), agentId: null, name: '', description: '' });
export const emptyA2aRow = (): A2aRow => ({ key: rowKey(), name: '', cardUrl: '', description: '', credential: '' });

type Tool = Agent['tools'][number];
type McpTool = Extract<Tool, { type: 'mcp' }>;
type AgentTool = Extract<Tool, { type: 'agent' }>;
type A2aTool = Extract<Tool, { type: 'a2a' }>;

export function formOf(agent?: Agent, skills: AssignedSkill[] = []): AgentFormValues {
  const tools = agent?.tools ?? [];
  const { fallbackModels = [], summaryModel = null, ...configuration } = agent?.configuration ?? ({} as Partial<Agent['configuration']>);
  return {
    name: agent?.name ?? '',
    appId: agent?.appId ?? 'default',
    description: agent?.description ?? '',
    model: agent?.model ?? 'builtin/echo',
    systemPrompt: agent?.systemPrompt ?? '',
    builtins: agent ? tools.flatMap((t) => (t.type === 'builtin' ? [t.name] : [])) : [...DEFAULT_GROUPS],
    knowledgeBases: tools.flatMap((t) => (t.type === 'builtin' && t.name === 'knowledge' && t.knowledgeBases ? [t.knowledgeBases] : []))[0],
    mcp: tools.flatMap((t) =>
      t.type === 'mcp'
        ? [
            {
              key: rowKey(),
              url: t.url,
              name: t.name ?? '',
              allowedTools: t.allowedTools ?? [],
              headers: Object.entries(t.headers ?? {}).map(([name, value]) => ({ key: rowKey(), name, value })),
            },
          ]
        : [],
    ),
    delegations: tools.flatMap((t) =>
      t.type === 'agent' ? [{ key: rowKey(), agentId: t.agentId, name: t.name ?? '', description: t.description ?? '' }] : [],
    ),
    a2a: tools.flatMap((t) =>
      t.type === 'a2a'
        ? [{ key: rowKey(), name: t.name, cardUrl: t.cardUrl, description: t.description ?? '', credential: t.credential ?? '' }]
        : [],
    ),
    fallbackModels,
    summaryModel: summaryModel ?? '',
    configuration: JSON.stringify(configuration, null, 2),
    skills: skills.map((s) => ({ key: rowKey(), skillId: s.id, priority: s.assignment.priority })),
    loadedSkills: skills.map((s) => s.id),
  };
}

/** A mistake found before asking the server, keyed as the server's errors are (e.g. `configuration`, `delegations.0.agentId`). */
export class LocalFormError extends Error {
  constructor(readonly errors: Record<string, string>) {
    super(Object.values(errors)[0]);
  }
}

function parseJson(text: string, field: string, fallback: unknown, shape: 'array' | 'object'): unknown {
  if (!text.trim()) return fallback;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new LocalFormError({ [field]: 'not valid JSON' });
  }
  if (shape === 'array' ? !Array.isArray(value) : !value || typeof value !== 'object' || Array.isArray(value)) {
    throw new LocalFormError({ [field]: `must be a JSON ${shape}` });
  }
  return value;
}

/**
 * The create or update body. Every built-in group is named (enabled or not), so the list is the
 * agent's complete set on an update as on a create; tools go in the order of toolSection below.
 */
export function bodyOf(v: AgentFormValues) {
  const unchosen = v.delegations.findIndex((row) => !row.agentId);
  if (unchosen >= 0) throw new LocalFormError({ [`delegations.${unchosen}.agentId`]: 'choose the agent to delegate to' });
  const configuration = parseJson(v.configuration, 'configuration', {}, 'object') as Record<string, unknown>;
  // The knowledge group keeps the bases it is limited to: the form names every group, so one it sent
  // bare would widen the agent to every base.
  const builtins = BUILTIN_GROUPS.map((name) => ({
    type: 'builtin' as const,
    name,
    enabled: v.builtins.includes(name),
    ...(name === 'knowledge' && v.knowledgeBases ? { knowledgeBases: v.knowledgeBases } : {}),
  }));
  const mcp = v.mcp.map((row): McpTool => {
    const tool: McpTool = { type: 'mcp', url: row.url.trim() };
    if (row.name.trim()) tool.name = row.name.trim();
    if (row.allowedTools.length) tool.allowedTools = row.allowedTools;
    const headers = row.headers.filter((h) => h.name.trim());
    if (headers.length) tool.headers = Object.fromEntries(headers.map((h) => [h.name.trim(), h.value]));
    return tool;
  });
  const delegations = v.delegations.map((row): AgentTool => {
    const tool: AgentTool = { type: 'agent', agentId: row.agentId! };
    if (row.name.trim()) tool.name = row.name.trim();
    if (row.description.trim()) tool.description = row.description.trim();
    return tool;
  });
  const a2a = v.a2a.map((row): A2aTool => {
    const tool: A2aTool = { type: 'a2a', name: row.name.trim(), cardUrl: row.cardUrl.trim() };
    if (row.description.trim()) tool.description = row.description.trim();
    if (row.credential) tool.credential = row.credential;
    return tool;
  });
  return {
    name: v.name,
    appId: v.appId,
    description: v.description || undefined,
    model: v.model.trim(),
    systemPrompt: v.systemPrompt || undefined,
    tools: [...builtins, ...mcp, ...delegations, ...a2a],
    configuration: { ...configuration, fallbackModels: v.fallbackModels, summaryModel: v.summaryModel.trim() || null },
  };
}

type RowSection = 'mcp' | 'delegations' | 'a2a';

/** Where the tool at `index` of bodyOf's list came from: the built-in groups, or a row of a section. */
function toolSection(v: AgentFormValues, index: number): { section: 'builtins' } | { section: RowSection; row: number } {
  if (index < BUILTIN_GROUPS.length) return { section: 'builtins' };
  let row = index - BUILTIN_GROUPS.length;
  for (const section of ['mcp', 'delegations', 'a2a'] as const) {
    if (row < v[section].length) return { section, row };
    row -= v[section].length;
  }
  return { section: 'builtins' };
}

/** The fields of each row section that the server's errors may name. */
const ROW_FIELDS: Record<RowSection, string[]> = {
  mcp: ['url', 'name', 'allowedTools', 'headers'],
  delegations: ['agentId', 'name', 'description'],
  a2a: ['name', 'cardUrl', 'description', 'credential'],
};

/** What the form shows under its fields: every message of a field, keyed by the form's own field names. */
export interface FormErrors {
  /** name, appId, description, model, systemPrompt, builtins, fallbackModels, summaryModel, configuration, skills. */
  fields: Record<string, string>;
  /** `${row}.url`, `${row}.name`, `${row}.allowedTools`, `${row}.headers`, `${row}` (the row as a whole). */
  mcp: Record<string, string>;
  /** `${row}.agentId`, `${row}.name`, `${row}.description`, `${row}`. */
  delegations: Record<string, string>;
  /** `${row}.name`, `${row}.cardUrl`, `${row}.description`, `${row}.credential`, `${row}`. */
  a2a: Record<string, string>;
  /** `${row}.skillId`, `${row}.priority`. */
  skills: Record<string, string>;
  /** Every error, named as the form names its fields ("MCP server 1 URL: ..."), for the summary at the top. */
  summary: string[];
}

export const noErrors = (): FormErrors => ({ fields: {}, mcp: {}, delegations: {}, a2a: {}, skills: {}, summary: [] });

/** The form's labels, for the summary. */
const FIELD_LABELS: Record<string, string> = {
  name: 'Name',
  appId: 'App',
  description: 'Description',
  model: 'Model',
  systemPrompt: 'System prompt',
  builtins: 'Built-in tools',
  fallbackModels: 'Fallback models',
  summaryModel: 'Summary model',
  configuration: 'Configuration',
  skills: 'Skills',
};
const ROW_LABELS: Record<RowSection, { row: string; fields: Record<string, string> }> = {
  mcp: { row: 'MCP server', fields: { url: 'URL', name: 'tool prefix', allowedTools: 'allowed tools', headers: 'headers' } },
  delegations: { row: 'Delegation', fields: { agentId: 'agent', name: 'tool name', description: 'description' } },
  a2a: { row: 'A2A agent', fields: { name: 'name', cardUrl: 'Agent Card URL', description: 'description', credential: 'credential' } },
};

/** The server's field errors of a create or update (or those found before sending), at the fields of the form they name. */
export function agentErrors(v: AgentFormValues, errors: FieldError[]): FormErrors {
  const out = noErrors();
  /** `message` under the field `key`; the summary names the field (`label`) and the path inside it. */
  const put = (into: Record<string, string>, key: string, inner: string[], message: string, label: string) => {
    addMessage(into, key, inner.length ? `${innerPath(inner)}: ${message}` : message);
    out.summary.push(`${[label, innerPath(inner)].filter(Boolean).join(' › ')}: ${message}`);
  };
  for (const e of errors) {
    const [field = 'body', ...rest] = segmentsOf(e.path);
    if (field === 'tools' && rest.length && /^\d+$/.test(rest[0])) {
      const [index, ...inner] = rest;
      const where = toolSection(v, Number(index));
      if (where.section === 'builtins') {
        put(out.fields, 'builtins', inner, e.message, FIELD_LABELS.builtins);
      } else {
        const [sub, ...deeper] = inner;
        const labels = ROW_LABELS[where.section];
        const row = `${labels.row} ${where.row + 1}`;
        if (sub && ROW_FIELDS[where.section].includes(sub)) {
          put(out[where.section], `${where.row}.${sub}`, deeper, e.message, `${row} ${labels.fields[sub] ?? sub}`);
        } else {
          put(out[where.section], `${where.row}`, inner, e.message, row);
        }
      }
    } else if (field === 'configuration' && (rest[0] === 'fallbackModels' || rest[0] === 'summaryModel')) {
      const [key, ...inner] = rest;
      put(out.fields, key, inner, e.message, FIELD_LABELS[key]);
    } else {
      put(out.fields, field, rest, e.message, FIELD_LABELS[field] ?? field);
    }
  }
  return out;
}

/**
 * The limits the server's schema states (form-limits.ts) that `body` (bodyOf's) breaks, as the server
 * would name them, so a breach is said before anything is sent.
 */
export function localAgentErrors(body: ReturnType<typeof bodyOf>): FieldError[] {
  const errors = checkFields(body, LIMITS.createAgent);
  body.tools.forEach((tool, i) => {
    const at = `body.tools.${i}`;
    if (tool.type === 'mcp') errors.push(...checkFields(tool, LIMITS.mcpTool, at));
    else if (tool.type === 'agent') errors.push(...checkFields(tool, LIMITS.agentTool, at));
    else if (tool.type === 'a2a') errors.push(...checkFields(tool, LIMITS.a2aTool, at));
  });
  return errors;
}

export interface SkillChanges {
  assign: { skillId: string; priority: number; row: number }[];
  update: { skillId: string; priority: number; row: number }[];
  unassign: string[];
}

/**
 * The assignments to make so the agent's skills become the rows', unassigning only skills of `loaded` (the
 * form's first rows) the rows no longer hold; a skill chosen twice is a local error.
 */
export function skillChanges(rows: SkillRow[], current: AssignedSkill[], loaded: string[]): SkillChanges {
  const seen = new Map<string, number>();
  const errors: Record<string, string> = {};
  rows.forEach((row, i) => {
    if (!row.skillId) return;
    if (seen.has(row.skillId)) errors[`${i}.skillId`] = 'chosen twice';
    seen.set(row.skillId, i);
  });
  if (Object.keys(errors).length) throw new LocalFormError(errors);
  const now = new Map(current.map((s) => [s.id, s.assignment.priority]));
  const changes: SkillChanges = { assign: [], update: [], unassign: [] };
  rows.forEach((row, i) => {
    if (!row.skillId) return;
    const priority = row.priority === '' ? 0 : Number(row.priority);
    const was = now.get(row.skillId);
    if (was === undefined) changes.assign.push({ skillId: row.skillId, priority, row: i });
    else if (was !== priority) changes.update.push({ skillId: row.skillId, priority, row: i });
  });
  // Only what the person removed: a skill assigned by someone else after the form was filled stays.
  const removable = new Set(loaded);
  changes.unassign = current.filter((s) => removable.has(s.id) && !seen.has(s.id)).map((s) => s.id);
  return changes;
}
