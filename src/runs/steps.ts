import type { LoopResult } from '../runtime/loop.js';
import type { PriceTable } from '../runtime/models/prices.js';
import type { StoredStep, StoredToolCall } from './columns.js';
import type { RunEvent } from './events.js';

/**
 * Where a run's time and money went (GET /api/v1/runs/:runId `steps` and `toolCalls`): written on the
 * run's row when it ends, so it outlives the run's events (compacted by the retention sweep).
 */

/** A step as the loop recorded it; `model` when a fallback answered it instead of the run's model. */
type LoopStep = LoopResult['steps'][number] & { model?: string };

/** The steps as stored at the run's end: each with the model that answered it and its cost at that model's price. */
export function stepsToStore(steps: readonly LoopStep[], runModel: string, prices: PriceTable): StoredStep[] {
  return steps.map((step) => {
    const model = step.model ?? runModel;
    return { ...step, model, cost: prices.cost(model, step.usage.inputTokens, step.usage.outputTokens) };
  });
}

/** The tool calls as stored at the run's end: each with its source (the tool provider that offered it). */
export function toolCallsToStore(calls: LoopResult['toolCalls'], sources: ReadonlyMap<string, string> | undefined): StoredToolCall[] {
  return calls.map((call) => ({ ...call, source: sources?.get(call.name) ?? null }));
}

/**
 * The tool calls of a run whose process died (leases.ts): those its row holds (written when it
 * paused for approval), then those its stored events tell of (a call's start is stored before the tool
 * acts, its result once it returns), each once. A call known only from its events has the run's start
 * as its start time (events carry none) and no end time; its result is kept when its end was stored.
 */
export function recoveredToolCalls(stored: StoredToolCall[], events: readonly RunEvent[], runStartedAt: string): StoredToolCall[] {
  const calls = stored.map((c) => ({ ...c }));
  const byId = new Map(calls.map((c) => [c.id, c]));
  for (const e of events) {
    const id = e.data.id;
    if (typeof id !== 'string') continue;
    if (e.event === 'tool_call_start' && !byId.has(id)) {
      const call: StoredToolCall = {
        id,
        name: String(e.data.name),
        input: e.data.input,
        result: null,
        startedAt: runStartedAt,
        completedAt: null,
        source: null,
      };
      calls.push(call);
      byId.set(id, call);
    } else if (e.event === 'tool_call_end') {
      const call = byId.get(id);
      if (call && call.result === null) call.result = e.data.result as Record<string, unknown>;
    }
  }
  return calls;
}

const durationMs = (startedAt: string | undefined, completedAt: string | null | undefined) =>
  startedAt && completedAt ? Math.max(0, Date.parse(completedAt) - Date.parse(startedAt)) : null;

/** A stored step as the API shows it; a run ended before steps carried their model, cost and times answers nulls for them. */
export function stepView(step: StoredStep, runModel: string) {
  const { startedAt, completedAt, model, cost, ...rest } = step;
  return {
    ...rest,
    model: model ?? runModel,
    cost: cost ?? null,
    startedAt: startedAt ?? null,
    completedAt: completedAt ?? null,
    durationMs: durationMs(startedAt, completedAt),
  };
}

/**
 * A stored tool call as the API shows it. Outcome: `ok`; `error` with the code the model was given
 * (the tool's own, tool_timeout, cancelled, invalid_tool_call...); `unfinished` when the run ended first.
 */
export function toolCallView(call: StoredToolCall) {
  const { source, ...rest } = call;
  const failed = call.result?.error as { code?: unknown } | undefined;
  const errorCode = failed && typeof failed === 'object' && typeof failed.code === 'string' ? failed.code : null;
  return {
    ...rest,
    source: source ?? null,
    durationMs: durationMs(call.startedAt, call.completedAt),
    // By the result: a call recovered from an interrupted run's events has its result but no end time.
    outcome: call.result === null ? ('unfinished' as const) : errorCode ? ('error' as const) : ('ok' as const),
    errorCode,
  };
}
