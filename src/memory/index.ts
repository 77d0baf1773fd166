import type { Agent } from '../agents/schemas.js';
import type { AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import type { RunsService } from '../runs/service.js';
import type { ToolRegistry } from '../runtime/tools/registry.js';
import { memoryPrompt } from './prompt.js';
import { MemoryService } from './service.js';
import { type MemoryToolPolicies, memoryToolProvider } from './tools.js';

/**
 * Builds the memory domain and plugs it into the others: its blocks join every run's system prompt,
 * its three tools join the runs of agents that list the `memory` group (tool provider `memory`), and
 * deleting an agent drops what it remembered.
 */
export function createMemoryDomain(
  db: Db,
  deps: { agents: AgentsService; tools: ToolRegistry<Agent>; runs: RunsService; policies: MemoryToolPolicies },
): MemoryService {
  const memory = new MemoryService(db, deps.agents);
  deps.tools.register('memory', memoryToolProvider(memory, deps.policies));
  deps.runs.systemPromptContributors.push(memoryPrompt(memory));
  deps.agents.deleteHooks.push(memory.forgetAgent);
  return memory;
}
