import { inputCheck } from './input-schema.js';
import type { RuntimeTool, ToolAgent, ToolContext, ToolProvider, ToolSet } from './types.js';

/** Assembles the tools of one run from the tool providers it is built with, for agents of type A. */
export class ToolRegistry<A extends ToolAgent = ToolAgent> {
  private readonly providers: readonly { name: string; provide: ToolProvider<A> }[];

  /** The providers by group name, in the order their tools are offered (of two tools with one name, the first is kept). */
  constructor(providers: Readonly<Record<string, ToolProvider<A>>>) {
    this.providers = Object.entries(providers).map(([name, provide]) => ({ name, provide }));
  }

  /**
   * All tools for a run. A provider that fails (an MCP server down, say) contributes nothing and
   * leaves a warning on the run, so one broken source never stops the run.
   */
  async forRun(ctx: ToolContext<A>): Promise<ToolSet<A>> {
    const names = this.providers.map((p) => p.name);
    return combine(await Promise.all(this.providers.map((p) => provideSafely(p, ctx))), names);
  }
}

async function provideSafely<A extends ToolAgent>(p: { name: string; provide: ToolProvider<A> }, ctx: ToolContext<A>): Promise<ToolSet<A>> {
  try {
    return await p.provide(ctx);
  } catch (err) {
    return { tools: [], warnings: [`${p.name} tools unavailable: ${(err as Error).message}`] };
  }
}

/**
 * One set of the providers' sets: the first tool of each name, every warning, one close for all.
 * A tool whose input schema cannot check its calls (`input-schema.ts`) is left out, with a warning,
 * rather than offered to the model and refused at every call; the schemas are compiled here, once each.
 */
function combine<A extends ToolAgent>(sets: ToolSet<A>[], names: string[]): ToolSet<A> {
  const warnings = sets.flatMap((s) => s.warnings ?? []);
  const closing = sets.filter((s) => s.close);
  const seen = new Set<string>();
  const sources = new Map<string, string>();
  sets.forEach((s, i) => {
    for (const t of s.tools) if (!sources.has(t.name)) sources.set(t.name, names[i]);
  });
  const usable = (t: RuntimeTool<A>) => {
    try {
      inputCheck(t.inputSchema);
      return true;
    } catch (err) {
      warnings.push(`tool ${t.name} left out: its input schema is unusable (${(err as Error).message})`);
      return false;
    }
  };
  const tools = sets
    .flatMap((s) => s.tools)
    .filter((t) => {
      if (seen.has(t.name)) return false;
      seen.add(t.name);
      return usable(t);
    });
  return {
    tools,
    warnings,
    sources,
    close: closing.length
      ? async () => {
          await Promise.allSettled(closing.map((s) => s.close!()));
        }
      : undefined,
  };
}
