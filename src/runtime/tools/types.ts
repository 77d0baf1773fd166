import type { MaybePromise } from '../../maybe-promise.js';
import type { Agent } from '../../agents/schemas.js';

/** What a tool knows about the run that calls it. */
export interface ToolContext {
  tenantId: string;
  agent: Agent;
  runId: string;
  conversationId: string | null;
  /** How many delegations deep the run is (0 or absent: not started by another agent). */
  delegationDepth?: number;
  /** Aborted when the run is cancelled or the tool times out. */
  signal: AbortSignal;
}

/** A tool as the runtime offers it to the model. */
export interface RuntimeTool {
  name: string;
  description: string;
  /** JSON Schema of the input object. */
  inputSchema: Record<string, unknown>;
  /** The result becomes a JSON object for the model and the run record; throwing is a tool error. */
  execute(input: unknown, ctx: ToolContext): Promise<unknown>;
}

/** A set of tools for one run, with anything to release when the run ends (connections...). */
export interface ToolSet {
  tools: RuntimeTool[];
  /** Sources that could not contribute (a server down); recorded on the run. */
  warnings?: string[];
  close?(): Promise<void>;
}

/**
 * Contributes tools to a run. Domains register providers (skills, connectors, MCP servers,
 * delegation to other agents); each looks at the agent's `tools` list and answers for its kind,
 * synchronously when it has nothing to wait for (most agents have no tools of most kinds).
 */
export type ToolProvider = (ctx: Omit<ToolContext, 'signal'> & { signal: AbortSignal }) => MaybePromise<ToolSet>;

/** A tool failure the model sees as `{ error: { code, message } }`. */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
