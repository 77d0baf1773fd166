import type { LanguageModelV3Prompt, LanguageModelV3ToolResultPart } from '@ai-sdk/provider';
import { now } from '../ids.js';
import type { StepToolCall } from './model-step.js';
import type { ApprovalCheck } from './tools/approval-policy.js';

/**
 * Tool calls that wait for a person (docs/runtime.md): the tool loop asks `check` before a step's
 * calls run; when any must wait, the calls needing nobody run, and the loop pauses with a `LoopPause`
 * (the prompt so far, the step's calls and their results). The run engine persists it; a loop
 * resumed with the decisions runs the approved calls (with any edited arguments), answers the
 * rejected ones with the reason as their result, and goes on as if it had never stopped.
 */

/** One call of the paused step: `reason` set while it waits, `result` set when it already ran. */
interface PausedCall {
  call: StepToolCall;
  reason?: string;
  result?: LanguageModelV3ToolResultPart;
}

/** Where a paused loop stands. Plain JSON: the run engine stores it and any process resumes it. */
export interface LoopPause {
  prompt: LanguageModelV3Prompt;
  /** The index of the step the loop goes on with. */
  nextStep: number;
  calls: PausedCall[];
}

/** A person's decision on a waiting call. */
export interface ToolDecision {
  approved: boolean;
  /** Approved with edited arguments: the call runs with these. */
  input?: unknown;
  /** Rejected: what the model is told. */
  reason?: string;
}

export interface LoopApproval<R = unknown> {
  check?: ApprovalCheck;
  /** Resuming a paused loop: where it stood (with its result so far) and the decisions by tool call id. */
  resume?: { pause: LoopPause & { result: R }; decisions: ReadonlyMap<string, ToolDecision> };
}

/** Why each of the step's calls waits (undefined: it runs now), or undefined when none waits. */
export function waitingCalls(
  approval: LoopApproval | undefined,
  calls: StepToolCall[],
  tools: ReadonlyMap<string, unknown>,
): (string | undefined)[] | undefined {
  const check = approval?.check;
  if (!check || !calls.length) return undefined;
  // A call the model got wrong cannot run anyway: it is answered at once, as always.
  const reasons = calls.map((c) =>
    c.invalid === undefined && tools.has(c.toolName) ? check({ name: c.toolName, input: c.input }) : undefined,
  );
  return reasons.some((r) => r !== undefined) ? reasons : undefined;
}

interface CallRecord {
  id: string;
  name: string;
  input: unknown;
  result: Record<string, unknown> | null;
  startedAt: string;
  completedAt: string | null;
}

type ToolEvent =
  | { event: 'tool_call_start'; data: { id: string; name: string; input: unknown } }
  | { event: 'tool_call_end'; data: { id: string; result: Record<string, unknown> } };

/**
 * The paused step's results, in the order of its calls: those that ran before the pause, approved
 * calls run now, rejected ones (and any left undecided) answered with the reason. An edited call's
 * arguments also replace the model's own in the prompt, so the model sees what was run.
 */
export async function resumedCalls(
  resume: NonNullable<LoopApproval['resume']>,
  runTool: (call: StepToolCall) => Promise<LanguageModelV3ToolResultPart>,
  toolCalls: CallRecord[],
  onEvent: (e: ToolEvent) => void,
): Promise<LanguageModelV3ToolResultPart[]> {
  const { pause, decisions } = resume;
  const assistant = pause.prompt.findLast((m) => m.role === 'assistant');
  return Promise.all(
    pause.calls.map(async ({ call, result }) => {
      if (result) return result;
      const decision = decisions.get(call.toolCallId);
      if (decision?.approved) {
        if (decision.input === undefined) return runTool(call);
        if (assistant && Array.isArray(assistant.content))
          for (const part of assistant.content)
            if (part.type === 'tool-call' && part.toolCallId === call.toolCallId) part.input = decision.input;
        return runTool({ ...call, input: decision.input });
      }
      const value = { error: { code: 'rejected', message: decision?.reason ?? 'the call was not approved' } };
      const at = now();
      toolCalls.push({ id: call.toolCallId, name: call.toolName, input: call.input, result: value, startedAt: at, completedAt: at });
      onEvent({ event: 'tool_call_start', data: { id: call.toolCallId, name: call.toolName, input: call.input } });
      onEvent({ event: 'tool_call_end', data: { id: call.toolCallId, result: value } });
      return { type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'json', value } };
    }),
  );
}
