import type { Agent } from '../agents/schemas.js';
import { DomainError } from '../errors.js';
import { ToolError, type RuntimeTool, type ToolProvider } from '../runtime/tools/types.js';
import type { Passage } from './schemas.js';
import type { KnowledgeSearch } from './search.js';
import type { KnowledgeService } from './service.js';

/**
 * The knowledge tool (docs/knowledge.md, "Agents"): `knowledge_search`, given to an agent whose tools
 * hold `{ "type": "builtin", "name": "knowledge" }`, over the bases that entry lists (every base of
 * the tenant without a list). An ordinary tool: its input checked by the registry, each call decided
 * by TBAC (the agent calling a tool of its own), approval rules and timeouts applied by the runtime.
 * Its result carries `citations`, which the run records (runs/citations.ts).
 */

/** What the tool needs of identity: TBAC's decision for a tool name now (identity/policies.ts). */
export interface KnowledgeToolPolicies {
  evaluate(tenantId: string, request: { caller: string; callee: string; tool: string }): Promise<{ allowed: boolean; reason: string }>;
}

const TOOL = 'knowledge_search';
/** Bases named in the tool's description at most (the model can still search every base it may). */
const DESCRIBED_BASES = 20;
const MAX_K = 20;

const knowledgeEntry = (agent: Agent) => agent.tools.find((t) => t.type === 'builtin' && t.name === 'knowledge');

export function knowledgeToolProvider({
  knowledge,
  search,
  policies,
}: {
  knowledge: KnowledgeService;
  search: KnowledgeSearch;
  policies: KnowledgeToolPolicies;
}): ToolProvider<Agent> {
  const none = { tools: [] };
  return async (ctx) => {
    const entry = knowledgeEntry(ctx.agent);
    if (!entry) return none;
    const listed = 'knowledgeBases' in entry ? entry.knowledgeBases : undefined;
    const bases = await knowledge.basesFor(ctx.tenantId, listed);
    if (!bases.length) return { tools: [], warnings: ['knowledge: none of the knowledge bases this agent may search exists'] };
    const allowed = new Set(bases.map((b) => b.id));
    const described = bases
      .slice(0, DESCRIBED_BASES)
      .map((b) => `${b.id}: ${b.name}${b.description ? ` (${b.description.slice(0, 200)})` : ''}`)
      .join('; ');
    const tool: RuntimeTool<Agent> = {
      name: TOOL,
      description: `Search your knowledge bases for passages that answer a question; each comes with a citation (document, title, position) to name when you use it. Knowledge bases: ${described}${bases.length > DESCRIBED_BASES ? `; and ${bases.length - DESCRIBED_BASES} more` : ''}.`,
      inputSchema: {
        type: 'object',
        properties: {
          query: { type: 'string', minLength: 1, maxLength: 2000, description: 'what to look for, in words the documents would use' },
          knowledgeBaseIds: {
            type: 'array',
            items: { type: 'string', minLength: 1, maxLength: 64 },
            maxItems: 16,
            description: 'the knowledge bases to search (default: all of yours)',
          },
          k: { type: 'integer', minimum: 1, maximum: MAX_K, description: 'passages to answer (default 5)' },
          filters: {
            type: 'object',
            properties: {
              tags: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 64 }, maxItems: 32 },
              metadata: { type: 'object', maxProperties: 32, additionalProperties: { type: ['string', 'number', 'boolean', 'null'] } },
              documentIds: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 64 }, maxItems: 100 },
            },
            additionalProperties: false,
          },
        },
        required: ['query'],
        additionalProperties: false,
      },
      async execute(raw, toolCtx) {
        const input = raw as { query: string; knowledgeBaseIds?: string[]; k?: number; filters?: Record<string, unknown> };
        const decision = await policies.evaluate(toolCtx.tenantId, { caller: toolCtx.agent.id, callee: toolCtx.agent.id, tool: TOOL });
        if (!decision.allowed) throw new ToolError('access_denied', `TBAC denied ${TOOL}: ${decision.reason}`);
        const ids = input.knowledgeBaseIds ?? [...allowed];
        const refused = ids.find((id) => !allowed.has(id));
        if (refused) throw new ToolError('knowledge_base_not_allowed', `${refused} is not one of your knowledge bases`);
        const k = input.k ?? 5;
        const found: Passage[] = [];
        for (const id of new Set(ids)) {
          try {
            const result = await search.search(
              toolCtx.tenantId,
              id,
              { query: input.query, k, mode: 'hybrid', filters: input.filters },
              { runId: toolCtx.runId },
            );
            found.push(...result.passages);
          } catch (err) {
            // A base deleted since the run began, an embedding provider down: the model is told, in the domain's words.
            if (err instanceof DomainError) throw new ToolError(err.code, err.detail);
            throw err;
          }
        }
        // Each base's hybrid scores are relative scores on one scale (0..1): the best of all bases first.
        const passages = found.sort((a, b) => b.citation.score - a.citation.score).slice(0, k);
        return { passages, citations: passages.map((p) => p.citation) };
      },
    };
    return { tools: [tool] };
  };
}
