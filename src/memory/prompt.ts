import type { SystemPromptContributor } from '../runs/types.js';
import { MEMORY_BLOCK_MAX_CHARS, type MemoryBlock } from './schemas.js';
import type { MemoryService } from './service.js';
import { canChangeMemory, hasMemoryTools, scopeOf } from './tools.js';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
/**
 * A block's text as markup text: its own `</memory>` or `<memory ...>` cannot end its block or open
 * another (a user's block passing for an agent-wide one). Attribute values escape their quotes too.
 */
const escapeText = (text: string) => text.replace(/[&<>]/g, (c) => ENTITIES[c]!);
const escapeAttribute = (value: string) => value.replace(/[&<>"]/g, (c) => ENTITIES[c]!);

/**
 * The system prompt section of a run: the agent's blocks and, in a conversation with a user, that
 * user's, each with its label and scope; nothing when there are none. How to change them is said only
 * when the run has the memory tools and may change a block.
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
    // The model quotes a block's text back to memory_replace: as stored, not as escaped here.
    if (blocks.some((b) => /[&<>]/.test(b.value)))
      lines.push('In a block, &lt; &gt; &amp; stand for < > & (give memory_replace the characters).');
  }
  for (const b of blocks)
    lines.push(`<memory label="${escapeAttribute(b.label)}" scope="${scopeOf(b)}">`, escapeText(b.value), '</memory>');
  return lines.join('\n');
}

/** Memory's section of every run's system prompt (runs' SystemPromptContributor). */
export function memoryPrompt(memory: MemoryService): SystemPromptContributor {
  return async (ctx) =>
    renderMemory(
      await memory.forRun(ctx.tenantId, ctx.agent.id, ctx.userId ?? null),
      ctx.toolsEnabled && hasMemoryTools(ctx.agent) && canChangeMemory(ctx),
    );
}
