import type { ToolContext, ToolProvider, ToolSet } from './types.js';

/** Collects tool providers and assembles the tools of one run. */
export class ToolRegistry {
  private readonly providers: { name: string; provide: ToolProvider }[] = [];

  register(name: string, provide: ToolProvider) {
    this.providers.push({ name, provide });
  }

  /**
   * All tools for a run. A provider that fails (an MCP server down, say) contributes nothing and
   * leaves a warning on the run, so one broken source never stops the run.
   */
  async forRun(ctx: ToolContext): Promise<ToolSet> {
    const sets = await Promise.all(
      this.providers.map(async (p): Promise<ToolSet> => {
        try {
          return await p.provide(ctx);
        } catch (err) {
          return { tools: [], warnings: [`${p.name} tools unavailable: ${(err as Error).message}`] };
        }
      }),
    );
    const seen = new Set<string>();
    const tools = sets.flatMap((s) => s.tools).filter((t) => (seen.has(t.name) ? false : (seen.add(t.name), true)));
    return {
      tools,
      warnings: sets.flatMap((s) => s.warnings ?? []),
      close: async () => {
        await Promise.allSettled(sets.map((s) => s.close?.()));
      },
    };
  }
}
