import type { FastifyPluginAsync } from 'fastify';
import type { Agent } from '../agents/schemas.js';
import type { AgentsService, DeleteHook, DuplicateHook } from '../agents/service.js';
import type { Db } from '../db/database.js';
import type { SystemPromptContributor } from '../runs/types.js';
import type { ToolProvider } from '../runtime/tools/types.js';
import type { ApprovalActions, ApprovalGateway } from '../tasks/approvals.js';
import { skillApprovalActions } from './approvals.js';
import { ConnectorsService } from './connectors/service.js';
import type { ProtectedResourceOptions } from './mcp.js';
import { skillsPlugin } from './plugin.js';
import { SkillsService } from './service.js';
import { SkillTools } from './tools.js';

export interface SkillsDomainOptions {
  db: Db;
  agents: AgentsService;
  masterKey: Buffer;
  /** Lazy port to the approval gateway (the tasks domain, built after skills: resolved when a request is made). */
  approvals: () => ApprovalGateway;
  /** What the MCP endpoint's protected resource metadata names (RFC 9728). */
  protectedResource: ProtectedResourceOptions;
}

export interface SkillsDomain {
  skills: SkillsService;
  connectors: ConnectorsService;
  skillTools: SkillTools;
  /** The routes of /api/skills, /api/v1/connectors and the MCP endpoint; nothing runs in the background. */
  plugin: FastifyPluginAsync;
  contributions: {
    /** The five skill and connector tools, for agents that list the `skills` or `connectors` group. */
    toolProviders: { skills: ToolProvider<Agent> };
    /** The agent's usable skills announced in every run's system prompt. */
    systemPrompt: SystemPromptContributor;
    /** A deleted agent's assignments go with it. */
    onAgentDeleted: DeleteHook;
    /** A duplicated agent gets the original's assignments. */
    onAgentDuplicated: DuplicateHook;
    /** What deciding skill_request's and connector_request's tasks does (the tasks domain performs it). */
    approvalActions: ApprovalActions;
    /** The skills an agent may use now: its badge lists them (identity), its Agent Card too (a2a). */
    skillCapabilities: (tenantId: string, agentId: string) => ReturnType<SkillsService['usableSkillBriefs']>;
  };
}

/** Builds the skills domain: skills, connectors, and the five tools over them (in runs, and over MCP). */
export function createSkillsDomain({ db, agents, masterKey, approvals, protectedResource }: SkillsDomainOptions): SkillsDomain {
  const skills = new SkillsService({ db, agents });
  const connectors = new ConnectorsService({ db, masterKey });
  const skillTools = new SkillTools({ skills, connectors, approvals });
  return {
    skills,
    connectors,
    skillTools,
    plugin: (app) => skillsPlugin(app, { skills, connectors, skillTools, agents, protectedResource }),
    contributions: {
      toolProviders: { skills: skillTools.provider() },
      systemPrompt: (ctx) => skillTools.systemPrompt(ctx),
      onAgentDeleted: skills.forgetAgent,
      onAgentDuplicated: skills.copyAssignments,
      approvalActions: skillApprovalActions(skillTools),
      skillCapabilities: (tenantId, agentId) => skills.usableSkillBriefs(tenantId, agentId),
    },
  };
}
