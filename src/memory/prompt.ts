import type { SystemPromptContributor } from '../runs/types.js';
import { MEMORY_BLOCK_MAX_CHARS, type MemoryBlock } from './schemas.js';
import type { MemoryService } from './service.js';
import { hasMemoryTools, scopeOf } from './tools.js';

/**
 * The system prompt section of a run: the agent's blocks and, in a conversation with a user, that
 * user's, each with its label and scope; nothing when there are none. How to change them is said only
 * when the run has the memory tools.
 */
function renderMemory(blocks: readonly MemoryBlock[], editable: boolean): string | undefined {
  if (!blocks.length) return undefined;
  const lines = [
    '# Memory',
    'Memory blocks: what you keep across conversations. scope="agent" blocks are yours, shared with every user; scope="user" blocks are about the user of this conversation.',
  ];
  if (editable) {
    lines.push(
      `Keep them current: memory_append adds to a block, memory_replace corrects or condenses one (at most ${MEMORY_BLOCK_MAX_CHARS} characters each).`,
    );
  }
  for (const b of blocks) lines.push(`<memory label="${b.label}" scope="${scopeOf(b)}">`, b.value, '</memory>');
  return lines.join('\n');
}

/** Memory's section of every run's system prompt (runs' SystemPromptContributor). */
export function memoryPrompt(memory: MemoryService): SystemPromptContributor {
  return async (ctx) =>
    renderMemory(await memory.forRun(ctx.tenantId, ctx.agent.id, ctx.userId ?? null), ctx.toolsEnabled && hasMemoryTools(ctx.agent));
}
