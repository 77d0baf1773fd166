import type { RunAnswer } from '../helpers/execute.js';

/** What the A2A tool answers (its result is typed as an open record, being any tool's). */
export interface A2aToolResult {
  output?: string;
  taskId?: string;
  contextId?: string;
  error?: { code: string; message: string };
}

/** The result of a run's first tool call, as the A2A tool wrote it. */
export function firstToolResult(run: RunAnswer | undefined): A2aToolResult {
  if (!run) throw new Error('no run answered');
  return (run.toolCalls[0]?.result ?? {}) as A2aToolResult;
}
