import type { Agent } from '../agents/schemas.js';
import type { AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import type { RunsService } from '../runs/service.js';
import type { ToolRegistry } from '../runtime/tools/registry.js';
import { ConnectorsService } from './connectors/service.js';
import { SkillsService } from './service.js';
import { SkillTools } from './tools.js';

export { registerSkillApprovalHandlers } from './approvals.js';

export interface SkillsDomain {
  skills: SkillsService;
  connectors: ConnectorsService;
  skillTools: SkillTools;
}

/**
 * Builds the skills domain and plugs it into the others: the five tools join every run (tool
 * provider `skills`), assigned skills are announced in the system prompt, and duplicating or deleting
 * an agent copies or drops its assignments. Approvals are wired separately, once the tasks domain
 * exists: `registerSkillApprovalHandlers(tasks, skillTools)`.
 */
export function createSkillsDomain(
  db: Db,
  deps: { agents: AgentsService; tools: ToolRegistry<Agent>; runs: RunsService; masterKey: Buffer },
): SkillsDomain {
  const skills = new SkillsService(db, deps.agents);
  const connectors = new ConnectorsService(db, deps.masterKey);
  const skillTools = new SkillTools(skills, connectors);
  deps.tools.register('skills', skillTools.provider());
  deps.runs.systemPromptContributors.push((ctx) => skillTools.systemPrompt(ctx));
  deps.agents.duplicateHooks.push(skills.copyAssignments);
  deps.agents.deleteHooks.push(skills.forgetAgent);
  return { skills, connectors, skillTools };
}
