import { z } from 'zod';
import type { Agent } from '../agents/schemas.js';
import { newId } from '../ids.js';
import { ToolError, type RuntimeTool, type ToolProvider } from '../runtime/tools/types.js';
import type { ApprovalGateway } from '../tasks/approvals.js';
import type { Actor, Permission } from '../tenancy/permissions.js';
import { assignmentConfigColumn } from './columns.js';
import { CONNECTORS, findConnector } from './connectors/catalog.js';
import type { ConnectorsService } from './connectors/service.js';
import { rankReferences, terms } from './search.js';
import type { SkillsService } from './service.js';
import type { SkillRow } from './store.js';

/**
 * The five skill and connector tools (spec 4.4), served to hosted agents during runs (a tool provider)
 * and to agents running elsewhere over MCP (skills/mcp.ts). An agent gets `skill_discover`,
 * `skill_query` and `skill_request` when its `tools` hold `{ type: "builtin", name: "skills" }`, and
 * `connector_discover` and `connector_request` with `{ type: "builtin", name: "connectors" }`.
 */

/** Who calls a tool: the agent, in its tenant, and the actor recorded for what the call changes. */
export interface ToolCaller {
  tenantId: string;
  agent: Agent;
  actor: Actor;
}

type Group = 'skills' | 'connectors';

/** The approval actions the two request tools create tasks for (handled in approvals.ts). */
export const SKILL_ASSIGN_ACTION = 'skill.assign';
export const CONNECTOR_REQUEST_ACTION = 'connector.request';

export interface SkillToolDef<S extends z.ZodObject = z.ZodObject> {
  name: string;
  group: Group;
  description: string;
  /** What the tool's HTTP twin needs; callers with permissions of their own (MCP clients) must hold it. */
  permission: Permission;
  input: S;
  run(caller: ToolCaller, input: z.infer<S>): Promise<Record<string, unknown>>;
}

const define = <S extends z.ZodObject>(def: SkillToolDef<S>) => def as unknown as SkillToolDef;

const hasGroup = (agent: Agent, group: Group) => agent.tools.some((t) => t.type === 'builtin' && t.name === group);

const jsonSchemas = new WeakMap<z.ZodObject, Record<string, unknown>>();

/**
 * JSON Schema of a tool's input, as models and MCP clients read it. Converted once per schema:
 * converting on every run was an eighth of an execute's CPU time.
 */
function inputJsonSchema(schema: z.ZodObject): Record<string, unknown> {
  let json = jsonSchemas.get(schema);
  if (!json) {
    const { $schema: _ignored, ...rest } = z.toJSONSchema(schema) as Record<string, unknown>;
    json = rest;
    jsonSchemas.set(schema, json);
  }
  return json;
}

const MAX_ANNOUNCED = 50;

/** The system prompt section announcing an agent's skills (name and description), in the given order. */
export function announceSkills(skills: readonly Pick<SkillRow, 'id' | 'name' | 'description'>[]): string {
  const shown = skills.slice(0, MAX_ANNOUNCED);
  const lines = [
    '# Skills',
    "You have these skills, highest priority first. When a task falls within one, call skill_query with its id and what you need: it answers with the skill's instructions and the most relevant parts of its reference material. Follow those instructions.",
    ...shown.map((s) => `- ${s.name} (id ${s.id}): ${s.description.replace(/\s+/g, ' ')}`),
  ];
  if (skills.length > shown.length) lines.push(`- ... and ${skills.length - shown.length} more (skill_discover lists them)`);
  return lines.join('\n');
}

const skillSummary = (s: SkillRow) => ({ id: s.id, name: s.name, description: s.description, category: s.category, source: s.source });

/** Scores a text against query words: how many distinct words it holds (name matches count double). */
function keywordScore(words: string[], name: string, text: string): number {
  if (!words.length) return 1;
  const nameTerms = new Set(terms(name.replace(/-/g, ' ')));
  const textTerms = new Set(terms(text));
  return words.reduce((sum, w) => sum + (nameTerms.has(w) ? 2 : 0) + (textTerms.has(w) ? 1 : 0), 0);
}

export interface SkillToolsOptions {
  skills: SkillsService;
  connectors: ConnectorsService;
  /**
   * Lazy port to the approval gateway (the tasks domain, built after skills: resolved when a request is
   * made); absent, the two request tools answer `approvals_unavailable`.
   */
  approvals?: () => ApprovalGateway;
}

export class SkillTools {
  readonly skills: SkillsService;
  readonly connectors: ConnectorsService;
  private readonly approvals: (() => ApprovalGateway) | undefined;
  readonly definitions: SkillToolDef[];

  constructor({ skills, connectors, approvals }: SkillToolsOptions) {
    this.skills = skills;
    this.connectors = connectors;
    this.approvals = approvals;
    this.definitions = this.define();
  }

  private requireApprovals(): ApprovalGateway {
    if (!this.approvals) {
      throw new ToolError(
        'approvals_unavailable',
        'requests need administrator approval, and approvals are not available on this platform',
      );
    }
    return this.approvals();
  }

  /** The tools an agent gets, from the builtin groups in its `tools`. */
  toolsFor(agent: Agent): SkillToolDef[] {
    return this.definitions.filter((d) => hasGroup(agent, d.group));
  }

  /** Validates the input, then runs the tool; a bad input is a tool error the model can correct. */
  async call(def: SkillToolDef, caller: ToolCaller, input: unknown): Promise<Record<string, unknown>> {
    const parsed = def.input.safeParse(input ?? {});
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ');
      throw new ToolError('invalid_input', `${def.name}: ${issues}`);
    }
    return def.run(caller, parsed.data);
  }

  /** The tool provider for runs: the agent acts as itself. */
  provider(): ToolProvider<Agent> {
    return async (ctx) => ({
      tools: this.toolsFor(ctx.agent).map<RuntimeTool<Agent>>((def) => ({
        name: def.name,
        description: def.description,
        inputSchema: inputJsonSchema(def.input),
        execute: (input, toolCtx) =>
          this.call(def, { tenantId: toolCtx.tenantId, agent: toolCtx.agent, actor: { type: 'agent', id: toolCtx.agent.id } }, input),
      })),
    });
  }

  /** The system prompt section for a run: the agent's usable skills, when it has the skill tools. */
  async systemPrompt(ctx: { tenantId: string; agent: Agent; toolsEnabled: boolean }): Promise<string | undefined> {
    if (!ctx.toolsEnabled || !hasGroup(ctx.agent, 'skills')) return undefined;
    const skills = await this.skills.usableSkillBriefs(ctx.tenantId, ctx.agent.id);
    return skills.length ? announceSkills(skills) : undefined;
  }

  // ---------------------------------------------------------------- the tools

  private define(): SkillToolDef[] {
    return [
      define({
        name: 'skill_discover',
        permission: 'skills:read',
        group: 'skills',
        description:
          'List the skills of this organisation (and of the platform store) by category or keyword: metadata only, each with assignedToMe. Query skills assigned to you with skill_query; ask for others with skill_request.',
        input: z.object({
          category: z.string().max(64).optional().describe('only skills of this category, e.g. engineering, sales, support, finance'),
          query: z.string().max(500).optional().describe('keywords matched against skill names and descriptions'),
        }),
        run: (caller, input) => this.discoverSkills(caller, input),
      }),
      define({
        name: 'skill_query',
        permission: 'skills:read',
        group: 'skills',
        description:
          'Read one of your assigned skills: its instructions, its configuration for you, the reference passages that best match your query, and the lists of its reference files and scripts. Give referenceFile to read one file whole.',
        input: z.object({
          skillId: z.string().min(1).max(200).describe('id (or name) of a skill assigned to you'),
          query: z.string().max(2000).describe('what you need from the skill'),
          context: z
            .string()
            .max(10_000)
            .optional()
            .describe('the situation you are in; its words help rank the references (weighing half as much as the query)'),
          referenceFile: z.string().max(300).optional().describe('name of a reference file (or script) to return whole, e.g. pricing.md'),
        }),
        run: (caller, input) => this.querySkill(caller, input),
      }),
      define({
        name: 'skill_request',
        // Creates an approval task (and a connector request): what POST /api/v1/tasks needs.
        permission: 'agents:write',
        group: 'skills',
        description:
          'Ask an administrator to assign you a skill (one from skill_discover that is not assigned to you). Creates an approval task; the skill is yours once approved.',
        input: z.object({
          skillId: z.string().min(1).max(200).describe('id or name of the skill, or the id of a store skill'),
          reason: z.string().min(1).max(2000).describe('why you need it, for the administrator'),
        }),
        run: (caller, input) => this.requestSkill(caller, input),
      }),
      define({
        name: 'connector_discover',
        permission: 'skills:read',
        group: 'connectors',
        description: 'List the integrations connected for this organisation and those available, each with the skills suggested for it.',
        input: z.object({
          category: z.string().max(64).optional().describe('only integrations of this category, e.g. engineering, sales, support, finance'),
        }),
        run: (caller, input) => this.discoverConnectors(caller, input),
      }),
      define({
        name: 'connector_request',
        // Creates an approval task (and a connector request): what POST /api/v1/tasks needs.
        permission: 'agents:write',
        group: 'connectors',
        description:
          'Ask an administrator to connect an integration you need (an id from connector_discover). Creates a task for administrator review.',
        input: z.object({
          integrationId: z.string().min(1).max(64).describe('the integration id, e.g. github'),
          reason: z.string().min(1).max(2000).describe('why you need it, for the administrator'),
        }),
        run: (caller, input) => this.requestConnector(caller, input),
      }),
    ];
  }

  private async discoverSkills(caller: ToolCaller, input: { category?: string; query?: string }) {
    const words = terms(input.query ?? '');
    const found = await this.skills.discover(caller.tenantId, caller.agent.id, { category: input.category });
    const tenantSkills = found.map(({ row, assignment }) => ({
      ...skillSummary(row),
      assignedToMe: Boolean(assignment?.enabled),
      acquired: true,
      score: keywordScore(words, row.name, `${row.description} ${row.category ?? ''}`),
    }));
    // Store skills the tenant has not acquired (and whose name no skill of the tenant already uses).
    const taken = new Set(found.map(({ row }) => row.name));
    const storeSkills = (await this.skills.listStore(caller.tenantId, input.category)).skills
      .filter((s) => !s.acquired && !taken.has(s.name))
      .map((s) => ({
        id: s.id,
        name: s.name,
        description: s.description,
        category: s.category,
        source: 'store',
        assignedToMe: false,
        acquired: false,
        score: keywordScore(words, s.name, `${s.description} ${s.category ?? ''}`),
      }));
    const skills = [...tenantSkills, ...storeSkills]
      .filter((s) => s.score > 0)
      .sort((a, b) => Number(b.assignedToMe) - Number(a.assignedToMe) || b.score - a.score || a.name.localeCompare(b.name))
      .map(({ score: _score, ...s }) => s);
    return {
      skills,
      total: skills.length,
      note: 'assignedToMe: you can use it with skill_query. acquired false: in the platform store, not yet in this organisation; skill_request asks for it.',
    };
  }

  private async querySkill(caller: ToolCaller, input: { skillId: string; query: string; context?: string; referenceFile?: string }) {
    const found = await this.skills.findForAgent(caller.tenantId, caller.agent.id, input.skillId);
    if (!found?.assignment?.enabled) {
      throw new ToolError(
        'skill_not_assigned',
        `the skill ${input.skillId} is not assigned to you (or its assignment is disabled); skill_discover lists skills, skill_request asks for one`,
      );
    }
    const { skill, assignment } = found;
    if (skill.status !== 'active')
      throw new ToolError('skill_archived', `the skill ${skill.name} has been archived and is no longer available`);
    const files = await this.skills.files(caller.tenantId, skill.id);
    const references = files.filter((f) => f.kind === 'reference');
    const scripts = files.filter((f) => f.kind === 'script');
    let referenceFile: Record<string, unknown> | undefined;
    if (input.referenceFile) {
      const wanted = input.referenceFile.replace(/^\.?\//, '');
      const file = files.find((f) => f.name === wanted || `${f.kind === 'reference' ? 'references' : 'scripts'}/${f.name}` === wanted);
      if (!file) {
        throw new ToolError(
          'reference_not_found',
          `${skill.name} has no file ${wanted}; it has: ${files.map((f) => f.name).join(', ') || 'no files'}`,
        );
      }
      referenceFile = { name: file.name, kind: file.kind, ...(file.language ? { language: file.language } : {}), content: file.content };
    }
    return {
      skill: skillSummary(skill),
      priority: Number(assignment.priority),
      config: assignmentConfigColumn(assignment.config),
      instructions: skill.instructions,
      query: input.query,
      matches: rankReferences(references, input.query, input.context ?? ''),
      references: references.map((f) => ({ name: f.name, size: f.size })),
      scripts: scripts.map((f) => ({ name: f.name, language: f.language ?? 'text', size: f.size })),
      ...(referenceFile ? { referenceFile } : {}),
    };
  }

  private async requestSkill(caller: ToolCaller, input: { skillId: string; reason: string }) {
    const { tenantId, agent } = caller;
    const found = await this.skills.findForAgent(tenantId, agent.id, input.skillId);
    let target: { skillId?: string; storeId?: string; name: string };
    if (found) {
      if (found.skill.status !== 'active') throw new ToolError('skill_archived', `the skill ${found.skill.name} has been archived`);
      if (found.assignment?.enabled)
        throw new ToolError('already_assigned', `the skill ${found.skill.name} is already assigned to you; use skill_query`);
      target = { skillId: found.skill.id, name: found.skill.name };
    } else {
      const entry = this.skills.storeEntry(input.skillId);
      if (!entry)
        throw new ToolError('skill_not_found', `no skill ${input.skillId} in this organisation or the store; skill_discover lists them`);
      target = { storeId: entry.id, name: entry.name };
    }
    const approvals = this.requireApprovals();
    const { taskId } = await approvals.createApprovalTask({
      tenantId,
      agentId: agent.id,
      name: `Skill request: ${target.name} for ${agent.name}`.slice(0, 200),
      description:
        `Agent ${agent.name} (${agent.id}) asks for the skill ${target.name}` +
        (target.storeId ? ' (from the platform store; approving also acquires it)' : '') +
        `. Reason: ${input.reason}\nApproving assigns the skill to the agent; rejecting leaves things as they are.`,
      action: SKILL_ASSIGN_ACTION,
      payload: {
        agentId: agent.id,
        ...(target.skillId ? { skillId: target.skillId } : { storeId: target.storeId }),
        skillName: target.name,
        reason: input.reason,
      },
      requestedBy: caller.actor,
    });
    return {
      status: 'awaiting_approval',
      taskId,
      skill: { id: target.skillId ?? target.storeId, name: target.name },
      message: 'An administrator has to approve this request; the skill is assigned to you once it is approved.',
    };
  }

  private async discoverConnectors(caller: ToolCaller, input: { category?: string }) {
    const [connected, requests, found] = await Promise.all([
      this.connectors.connectionsById(caller.tenantId),
      this.connectors.latestRequests(caller.tenantId, caller.agent.id),
      this.skills.discover(caller.tenantId, caller.agent.id, {}),
    ]);
    const byName = new Map(found.map(({ row, assignment }) => [row.name, { row, assignment }]));
    const entries = CONNECTORS.filter((c) => !input.category || c.category === input.category).map((c) => {
      const request = requests.get(c.id);
      return {
        id: c.id,
        name: c.name,
        category: c.category,
        description: c.description,
        connected: connected.has(c.id),
        ...(connected.has(c.id) ? { connectedAt: connected.get(c.id)!.created_at } : {}),
        myRequest: request ? { id: request.id, status: request.status, taskId: request.taskId } : null,
        suggestedSkills: c.suggestedSkills.map((name) => {
          const have = byName.get(name);
          return { name, skillId: have?.row.id ?? null, acquired: Boolean(have), assignedToMe: Boolean(have?.assignment?.enabled) };
        }),
      };
    });
    return { connected: entries.filter((e) => e.connected), available: entries.filter((e) => !e.connected) };
  }

  private async requestConnector(caller: ToolCaller, input: { integrationId: string; reason: string }) {
    const connector = findConnector(input.integrationId);
    if (!connector) {
      throw new ToolError('connector_not_found', `no integration ${input.integrationId}; known: ${CONNECTORS.map((c) => c.id).join(', ')}`);
    }
    if ((await this.connectors.connectionsById(caller.tenantId)).has(connector.id)) {
      throw new ToolError('already_connected', `${connector.name} is already connected for this organisation`);
    }
    const approvals = this.requireApprovals();
    const requestId = newId();
    const { taskId } = await approvals.createApprovalTask({
      tenantId: caller.tenantId,
      agentId: caller.agent.id,
      name: `Connector request: ${connector.name} for ${caller.agent.name}`.slice(0, 200),
      description:
        `Agent ${caller.agent.name} (${caller.agent.id}) asks for the ${connector.name} integration. Reason: ${input.reason}\n` +
        `Approving accepts the request; connect ${connector.name} under /api/v1/connectors/${connector.id}/connect to make it available.`,
      action: CONNECTOR_REQUEST_ACTION,
      payload: { requestId, connectorId: connector.id, agentId: caller.agent.id, reason: input.reason },
      requestedBy: caller.actor,
    });
    const request = await this.connectors.createRequest(
      { tenantId: caller.tenantId, actor: caller.actor },
      { id: requestId, agentId: caller.agent.id, connectorId: connector.id, reason: input.reason, taskId },
    );
    return {
      status: 'awaiting_approval',
      taskId,
      requestId: request.id,
      integrationId: connector.id,
      message: 'An administrator has to review this request.',
    };
  }
}
