import type { Context } from '@opentelemetry/api';
/**
 * What the runtime reads of the agent a run executes: its id and its tool specs (each provider picks
 * its kind by `type`). Domains hand over their own agent type, which tools then get back unchanged.
 */
export interface ToolAgent {
  id: string;
  tools: readonly { type: string }[];
}

/** What a tool knows about the run that calls it. */
export interface ToolContext<A extends ToolAgent = ToolAgent> {
  tenantId: string;
  agent: A;
  runId: string;
  conversationId: string | null;
  /** The end user the run's conversation is with, if it names one (memory tools keep each user's apart). */
  userId?: string | null;
  /**
   * Without a user, the agent-wide memory blocks cannot change in this run all the same: its caller
   * could not name the user it acts for (an A2A client), so it is no more the tenant's own than a user's.
   */
  agentMemoryReadOnly?: boolean;
  /** How many delegations deep the run is (0 or absent: not started by another agent). */
  delegationDepth?: number;
  /** The model's id of this call (set when the loop calls a tool), for its trace span. */
  toolCallId?: string;
  /** Aborted when the run is cancelled or the tool times out. */
  signal: AbortSignal;
  /** Traced, the call's `execute_tool` span: the parent of what the call does (code, a delegated run). */
  trace?: Context;
}

/**
 * The outbound guard's fetch (ssrf.ts). Traced, each request is a span under `parent` (a tool call's or
 * a run's context, or a W3C `traceparent`) and carries that span's traceparent to the server.
 */
export type OutboundFetch = (input: string | URL, init?: RequestInit, parent?: Context | string) => Promise<Response>;

/** A tool as the runtime offers it to the model. */
export interface RuntimeTool<A extends ToolAgent = ToolAgent> {
  name: string;
  description: string;
  /** JSON Schema of the input object. */
  inputSchema: Record<string, unknown>;
  /** The result becomes a JSON object for the model and the run record; throwing is a tool error. */
  execute(input: unknown, ctx: ToolContext<A>): Promise<unknown>;
}

/** A set of tools for one run, with anything to release when the run ends (connections...). */
export interface ToolSet<A extends ToolAgent = ToolAgent> {
  tools: RuntimeTool<A>[];
  /** Sources that could not contribute (a server down); recorded on the run. */
  warnings?: string[];
  /** Each tool's source, by tool name: the name its provider was registered under (mcp, skills, delegation, a2a). */
  sources?: ReadonlyMap<string, string>;
  close?(): Promise<void>;
}

/**
 * Contributes tools to a run. Domains register providers (skills, connectors, MCP servers,
 * delegation to other agents); each looks at the agent's `tools` list and answers for its kind.
 */
export type ToolProvider<A extends ToolAgent = ToolAgent> = (ctx: ToolContext<A>) => Promise<ToolSet<A>>;

/** A tool failure the model sees as `{ error: { code, message } }`. */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
