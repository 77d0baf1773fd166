import type { Agent } from '../agents/schemas.js';
import { DomainError } from '../errors.js';
import { ToolError, type RuntimeTool, type ToolContext, type ToolProvider } from '../runtime/tools/types.js';
import { MEMORY_BLOCK_MAX_CHARS, type MemoryBlock } from './schemas.js';
import type { MemoryService } from './service.js';

/**
 * The memory tools (docs/runtime.md, "Memory"): `memory_read`, `memory_append` and `memory_replace`,
 * given to an agent whose tools hold `{ "type": "builtin", "name": "memory" }`. They are ordinary
 * tools: their input checked by the registry, each call decided by TBAC (the agent calling a tool of
 * its own: caller and callee are the agent), and by whatever else the runtime applies to every call.
 */

/** What the tools need of identity: TBAC's decision for a tool name now, on identity's clock (identity/policies.ts). */
export interface MemoryToolPolicies {
  evaluate(tenantId: string, request: { caller: string; callee: string; tool: string }): Promise<{ allowed: boolean; reason: string }>;
}

const LABEL = {
  type: 'string',
  pattern: '^[A-Za-z0-9_-]{1,64}$',
  description: 'the block’s label, e.g. user_preferences (letters, digits, _ and -)',
};

interface MemoryToolDef {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  run(memory: MemoryService, ctx: ToolContext<Agent>, input: Record<string, string>): Promise<unknown>;
}

const target = (ctx: ToolContext<Agent>, label: string) => ({ agentId: ctx.agent.id, userId: ctx.userId ?? null, label });
const writer = (ctx: ToolContext<Agent>) => ({
  tenantId: ctx.tenantId,
  actor: { type: 'agent' as const, id: ctx.agent.id },
  runId: ctx.runId,
});
export const scopeOf = (b: MemoryBlock) => (b.userId === null ? 'agent' : 'user');
const brief = (b: MemoryBlock) => ({ label: b.label, scope: scopeOf(b), value: b.value, chars: b.chars, limit: b.limit });

const TOOLS: MemoryToolDef[] = [
  {
    name: 'memory_read',
    description:
      'Read your memory blocks: the texts you keep across conversations (also shown in your instructions). Give a label for one block; without it, all of them. scope agent: yours, shared by every user; scope user: about the user of this conversation.',
    inputSchema: { type: 'object', properties: { label: LABEL }, additionalProperties: false },
    async run(memory, ctx, input) {
      const blocks = (await memory.forRun(ctx.tenantId, ctx.agent.id, ctx.userId ?? null)).filter(
        (b) => input.label === undefined || b.label === input.label,
      );
      if (input.label !== undefined && !blocks.length) throw new ToolError('not_found', `there is no block ${input.label}`);
      return { blocks: blocks.map(brief) };
    },
  },
  {
    name: 'memory_append',
    description: `Remember something for later conversations: adds the text, on a line of its own, at the end of a memory block (made if there is none). In a conversation with a user, this is that user's memory. A block holds at most ${MEMORY_BLOCK_MAX_CHARS} characters: when one is full, condense it with memory_replace.`,
    inputSchema: {
      type: 'object',
      properties: {
        label: LABEL,
        text: { type: 'string', minLength: 1, maxLength: MEMORY_BLOCK_MAX_CHARS, description: 'what to remember' },
      },
      required: ['label', 'text'],
      additionalProperties: false,
    },
    run: async (memory, ctx, input) => brief(await memory.append(writer(ctx), target(ctx, input.label), input.text)),
  },
  {
    name: 'memory_replace',
    description:
      'Correct or condense a memory block: replaces the one place where old appears (exactly as written) with new; an empty new removes it. In a conversation with a user, this is that user’s memory.',
    inputSchema: {
      type: 'object',
      properties: {
        label: LABEL,
        old: { type: 'string', minLength: 1, maxLength: MEMORY_BLOCK_MAX_CHARS, description: 'the text to replace, as the block holds it' },
        new: { type: 'string', maxLength: MEMORY_BLOCK_MAX_CHARS, description: 'what replaces it (empty: removes it)' },
      },
      required: ['label', 'old', 'new'],
      additionalProperties: false,
    },
    run: async (memory, ctx, input) => brief(await memory.replace(writer(ctx), target(ctx, input.label), input.old, input.new)),
  },
];

export const hasMemoryTools = (agent: Agent) => agent.tools.some((t) => t.type === 'builtin' && t.name === 'memory');

/**
 * Whether a run may change any block: a user's run changes that user's; a run without one changes the
 * agent-wide blocks, unless its caller could not name the user it acts for (A2A, agentMemoryReadOnly).
 */
export const canChangeMemory = (run: { userId?: string | null; agentMemoryReadOnly?: boolean }) =>
  Boolean(run.userId) || !run.agentMemoryReadOnly;

/** The memory tools for the runs of agents that have them; the same tool objects for every run. */
export function memoryToolProvider(memory: MemoryService, policies: MemoryToolPolicies): ToolProvider<Agent> {
  const tools: RuntimeTool<Agent>[] = TOOLS.map((def) => ({
    name: def.name,
    description: def.description,
    inputSchema: def.inputSchema,
    async execute(input, ctx) {
      const decision = await policies.evaluate(ctx.tenantId, { caller: ctx.agent.id, callee: ctx.agent.id, tool: def.name });
      if (!decision.allowed) throw new ToolError('access_denied', `TBAC denied ${def.name}: ${decision.reason}`);
      try {
        return await def.run(memory, ctx, input as Record<string, string>);
      } catch (err) {
        // The service's refusals (a full block, text not found...) are the model's to read and act on.
        if (err instanceof DomainError) throw new ToolError(err.code, err.detail);
        throw err;
      }
    },
  }));
  const none = { tools: [] };
  // A run that can change no block is offered memory_read alone.
  const readOnly = { tools: tools.filter((tool) => tool.name === 'memory_read') };
  return async (ctx) => (hasMemoryTools(ctx.agent) ? (canChangeMemory(ctx) ? { tools } : readOnly) : none);
}
