import { type Static, type TSchema, Type } from 'typebox';
import { Value } from 'typebox/value';

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
  }),
);
const Budget = Type.Record(Type.String(), Type.Object({ monthlyBudgetUsd: Type.Number(), spentUsd: Type.Number() }));
const Options = Type.Intersect([Type.Record(Type.String(), Type.Unknown()), Type.Object({ budget: Type.Optional(Budget) })]);

function parseColumn<T extends TSchema>(schema: T, text: string, column: string): Static<T> {
  const value: unknown = JSON.parse(text);
  if (!Value.Check(schema, value)) throw new Error(`the stored run ${column} does not fit its schema`);
  return value;
}

export const errorColumn = (text: string | null) => (text ? parseColumn(StoredError, text, 'error') : null);
export const toolCallsColumn = (text: string) => parseColumn(ToolCalls, text, 'tool_calls');
export const stepsColumn = (text: string) => parseColumn(Steps, text, 'steps');
export const warningsColumn = (text: string) => parseColumn(Type.Array(Type.String()), text, 'warnings');
export const optionsColumn = (text: string) => parseColumn(Options, text, 'options');
