import { citationsOf } from './citations.js';
import { errorColumn, optionsColumn, structuredOutputColumn, stepsColumn, toolCallsColumn, warningsColumn } from './columns.js';
import { stepView, toolCallView } from './steps.js';
import type { RunRow } from './store.js';

/** Public shapes of a run (spec 2.5, CONTRACT.md "Executions and streaming"). */

export interface RunError {
  code: string;
  message: string;
}

export function runSummary(row: RunRow) {
  const toolCalls = toolCallsColumn(row.tool_calls);
  return {
    id: row.id,
    runId: row.id,
    agentId: row.agent_id,
    conversationId: row.conversation_id,
    taskId: row.task_id,
    kind: row.kind,
    status: row.status,
    model: row.model,
    output: row.output,
    structuredOutput: structuredOutputColumn(row.structured_output ?? null),
    finishReason: row.finish_reason ?? null,
    contextTruncated: Boolean(row.context_truncated),
    error: errorColumn(row.error),
    cost: row.cost,
    duration: row.duration_ms,
    tokenUsage: { inputTokens: row.input_tokens, outputTokens: row.output_tokens },
    toolCalls: toolCalls.map((c) => ({ id: c.id, name: c.name, input: c.input, result: c.result })),
    citations: citationsOf(toolCalls),
    warnings: warningsColumn(row.warnings),
    createdAt: row.created_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
  };
}

export function runDetails(row: RunRow) {
  const { budget, ...options } = optionsColumn(row.options);
  return {
    ...runSummary(row),
    input: row.input,
    options,
    /** The budgets in force when the run started, and what had been spent against them before it. */
    budget: budget ?? {},
    toolCalls: toolCallsColumn(row.tool_calls).map(toolCallView),
    steps: stepsColumn(row.steps).map((step) => stepView(step, row.model)),
    traceId: traceIdOf(row.traceparent),
  };
}

/** The trace id of a W3C traceparent (`00-<trace id>-<span id>-<flags>`): what an external tracer finds the run's spans by. */
function traceIdOf(traceparent: string | null | undefined): string | null {
  return /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/.exec(traceparent ?? '')?.[1] ?? null;
}
