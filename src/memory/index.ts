import type { FastifyPluginAsync } from 'fastify';
import type { Agent } from '../agents/schemas.js';
import type { AgentsService, DeleteHook } from '../agents/service.js';
import type { Db } from '../db/database.js';
import type { SystemPromptContributor } from '../runs/types.js';
import type { ToolProvider } from '../runtime/tools/types.js';
import { memoryPlugin } from './plugin.js';
import { memoryPrompt } from './prompt.js';
import { MemoryService } from './service.js';
import { type MemoryToolPolicies, memoryToolProvider } from './tools.js';

export interface MemoryDomainOptions {
  db: Db;
  agents: AgentsService;
  /** The TBAC decision the memory tools ask, as every tool does (identity's policies). */
  policies: MemoryToolPolicies;
}

export interface MemoryDomain {
  memory: MemoryService;
  /** The routes of /api/v1/agents/:id/memory; nothing runs in the background. */
  plugin: FastifyPluginAsync;
  contributions: {
    /** memory_read, memory_append, memory_replace, for agents that list the `memory` group. */
    toolProviders: { memory: ToolProvider<Agent> };
    /** The agent's blocks (and the user's) in every run's system prompt. */
    systemPrompt: SystemPromptContributor;
    /** A deleted agent's blocks go with it. */
    onAgentDeleted: DeleteHook;
  };
}

/** Builds the memory domain: agents' memory blocks, and what it adds to every run. */
export function createMemoryDomain({ db, agents, policies }: MemoryDomainOptions): MemoryDomain {
  const memory = new MemoryService({ db, agents });
  return {
    memory,
    plugin: (app) => memoryPlugin(app, { memory }),
    contributions: {
      toolProviders: { memory: memoryToolProvider(memory, policies) },
      systemPrompt: memoryPrompt(memory),
      onAgentDeleted: memory.forgetAgent,
    },
  };
}
