import { type Static, Type } from 'typebox';
import { parseJsonColumn } from '../db/json-column.js';

/**
 * The JSON columns of runs, parsed through their schemas: a value that does not fit is a damaged row,
 * reported as such, not passed on under a cast.
 */

const StoredError = Type.Object({ code: Type.String(), message: Type.String() });
const ToolCalls = Type.Array(
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    input: Type.Unknown(),
    result: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    startedAt: Type.String(),
    completedAt: Type.Union([Type.String(), Type.Null()]),
    // Written since issue 27 (runs/steps.ts); absent on runs ended before.
    source: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  }),
);
const Steps = Type.Array(
  Type.Object({
    index: Type.Number(),
    text: Type.String(),
    toolCallIds: Type.Array(Type.String()),
    injected: Type.Array(Type.String()),
    finishReason: Type.String(),
    usage: Type.Object({ inputTokens: Type.Number(), outputTokens: Type.Number() }),
    // Written since issue 27 (runs/steps.ts); absent on runs ended before.
    model: Type.Optional(Type.String()),
    cost: Type.Optional(Type.Number()),
    startedAt: Type.Optional(Type.String()),
    completedAt: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  }),
);
export type StoredStep = Static<typeof Steps>[number];
export type StoredToolCall = Static<typeof ToolCalls>[number];
// reservedUsd since runs reserve their worst-case cost (migration 0021); absent on older runs.
const Budget = Type.Record(
  Type.String(),
  Type.Object({ monthlyBudgetUsd: Type.Number(), spentUsd: Type.Number(), reservedUsd: Type.Optional(Type.Number()) }),
);
/** A run's warnings; a `tokens` row of run_events (the texts of the tokens it holds). */
const Texts = Type.Array(Type.String());
/** An event's data; the options a run was started with. */
const JsonObject = Type.Record(Type.String(), Type.Unknown());
const Options = Type.Intersect([JsonObject, Type.Object({ budget: Type.Optional(Budget) })]);

export const errorColumn = (text: string | null) => (text ? parseJsonColumn(StoredError, text, 'runs.error') : null);
export const toolCallsColumn = (text: string) => parseJsonColumn(ToolCalls, text, 'runs.tool_calls');
export const stepsColumn = (text: string) => parseJsonColumn(Steps, text, 'runs.steps');
export const warningsColumn = (text: string) => parseJsonColumn(Texts, text, 'runs.warnings');
/** The final answer validated against the run's response format (runtime/structured-output.ts). */
export const structuredOutputColumn = (text: string | null) => (text ? parseJsonColumn(JsonObject, text, 'runs.structured_output') : null);
export const optionsColumn = (text: string) => parseJsonColumn(Options, text, 'runs.options');
export const eventDataColumn = (text: string) => parseJsonColumn(JsonObject, text, 'run_events.data');
export const tokenTextsColumn = (text: string) => parseJsonColumn(Texts, text, 'run_events.data');

/** What resuming a paused run needs (run_suspensions.state, runs/pause.ts): its loop's pause, and how the run was started. */
const Suspension = Type.Object({
  pause: Type.Object({
    prompt: Type.Array(JsonObject),
    nextStep: Type.Integer({ minimum: 0 }),
    calls: Type.Array(
      Type.Object({
        call: Type.Object({
          toolCallId: Type.String(),
          toolName: Type.String(),
          input: Type.Unknown(),
          invalid: Type.Optional(Type.String()),
        }),
        reason: Type.Optional(Type.String()),
        result: Type.Optional(JsonObject),
      }),
    ),
    result: JsonObject,
  }),
  run: Type.Object({
    kind: Type.String(),
    actorId: Type.Union([Type.String(), Type.Null()]),
    enableTools: Type.Boolean(),
    maxTokens: Type.Optional(Type.Integer()),
    delegationDepth: Type.Optional(Type.Integer()),
    agentMemoryReadOnly: Type.Optional(Type.Boolean()),
    startedAtMs: Type.Number(),
    warnings: Type.Array(Type.String()),
  }),
});
export const suspensionColumn = (text: string) => parseJsonColumn(Suspension, text, 'run_suspensions.state');
