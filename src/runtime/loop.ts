import type {
  JSONSchema7,
  JSONValue,
  LanguageModelV3,
  LanguageModelV3FunctionTool,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultPart,
} from '@ai-sdk/provider';
import { now } from '../ids.js';
import { outOfBounds } from '../json-bounds.js';
import { type ContextOptions, ContextFitter } from './context/fit.js';
import { type ConversationTurn, turnMessages } from './context/history.js';
import { type ModelChoice, streamStepWithFallbacks } from './fallback-step.js';
import type { AnswerCut, StepOutput, StepToolCall } from './model-step.js';
import type { BreakerBoard } from './models/breaker.js';
import { DEFAULT_RETRY_POLICY, ProviderError, type ProviderErrorCode, type RetryPolicy } from './models/retries.js';
import type { ModelTimeouts } from './models/timeouts.js';
import type { AnswerShape } from './structured-output.js';
import { invalidToolInput } from './tools/input-schema.js';
import { type LoopApproval, type LoopPause, resumedCalls, waitingCalls } from './tool-approvals.js';
import { ToolError, type RuntimeTool, type ToolAgent, type ToolContext } from './tools/types.js';

export type { ConversationTurn } from './context/history.js';

/** The events a run streams (CONTRACT.md "Executions and streaming"), minus `done`/`error`. */
type LoopEvent =
  | { event: 'token'; data: { text: string } }
  | { event: 'tool_call_start'; data: { id: string; name: string; input: unknown } }
  | { event: 'tool_call_end'; data: { id: string; result: Record<string, unknown> } }
  | { event: 'context_truncated'; data: { droppedMessages: number; reason: string } }

  /** An answer broke off after `partial` was told: `next` says whether the step starts over (its tokens begin again) or the run fails. */
  | { event: 'answer_cut'; data: { code: string; message: string; model: string; partial: string; next: AnswerCut['next'] } };

interface ToolCallRecord {
  id: string;
  name: string;
  input: unknown;
  result: Record<string, unknown> | null;
  startedAt: string;
  completedAt: string | null;
}

interface StepRecord {
  index: number;
  text: string;
  toolCallIds: string[];
  /** User messages injected before this step. */
  injected: string[];
  finishReason: string;
  usage: { inputTokens: number; outputTokens: number };
  /** When the model was asked, and when its answer ended (null: it never did); the run's steps summary reads them. */
  startedAt: string;
  completedAt: string | null;
  /** The model that answered (`provider/name`): a fallback's when the agent's own model failed or was skipped. */
  model?: string;
}

export interface LoopResult {
  output: string;
  steps: StepRecord[];
  toolCalls: ToolCallRecord[];
  usage: { inputTokens: number; outputTokens: number };
  /**
   * How the loop ended: stop (answered), max_steps, length (the answer cut off: its output limit or a
   * content filter; the last step's finishReason says which), cancelled, awaiting_approval (paused: `paused`).
   */
  finish: 'stop' | 'max_steps' | 'length' | 'cancelled' | 'awaiting_approval';
  /** Set when a tool call waits for a person: what resuming the loop needs (tool-approvals.ts). */
  paused?: LoopPause;
  /** What the provider warned about (unsupported settings...), each once however many steps said it. */
  warnings: string[];
  /** The final answer parsed and validated against the run's response format (structured-output.ts). */
  structuredOutput?: Record<string, unknown>;
  /** Older history was left out of a step's prompt without a summary (context/fit.ts). */
  contextTruncated?: boolean;
  /** What fitting the context cost: the summarising model's calls (context/fit.ts). */
  summaryUsage?: { inputTokens: number; outputTokens: number };
}

/** Thrown when the model call fails; carries what was produced before the failure, and its code (model_error when not the provider's). */
export class ModelCallError extends Error {
  constructor(
    message: string,
    readonly partial: LoopResult,
    readonly code: ProviderErrorCode | 'model_error' | 'invalid_output' = 'model_error',
    /** A connection-level provider failure's own words (it may name internal addresses): the caller logs them, the run never says them. */
    readonly detail?: string,
  ) {
    super(message);
  }
}

export interface LoopInput<A extends ToolAgent = ToolAgent> {
  model: LanguageModelV3;
  /** How a failed model call is retried (the model's provider's policy). */
  retry?: RetryPolicy;
  /** How long each attempt of the model's calls may take (models/timeouts.ts). */
  timeouts?: ModelTimeouts;
  /** The model's id (`provider/name`), recorded on the steps it answers and its breaker's key. */
  modelId?: string;
  /** Models a step turns to, in order, when the model fails for good or its breaker is open (fallback-step.ts). */
  fallbacks?: ModelChoice[];
  /** Watches the attempts of each model's calls, by model id (tracing's `chat` spans); none: unwatched. */
  watchModel?: (modelId: string) => ModelChoice['watch'];
  /** The process's breakers (models/breaker.ts); none: every model is always tried. */
  breakers?: BreakerBoard;
  system?: string;
  messages: ConversationTurn[];
  tools: RuntimeTool<A>[];
  toolContext: Omit<ToolContext<A>, 'signal'>;
  maxSteps: number;
  maxTokens?: number;
  temperature?: number;
  toolTimeoutMs: number;
  signal: AbortSignal;
  /** Messages injected while the run is going; drained at each step boundary. */
  drainInbox(): string[];
  onEvent(e: LoopEvent): void;
  /** The caller hears nothing before the run ends (a plain execute): an answer cut part-way is retried or falls back (model-step.ts). */
  cutRestarts?: boolean;
  /** Told of each model call retried after a provider failure, with the model asked (metrics). */
  onRetry?(code: ProviderErrorCode, model: string): void;
  /**
   * Awaited once a tool call's start is told (before the tool acts) and once a step's calls have
   * returned (before the next step): the events are stored, so a run whose process dies says what ran.
   */
  toolEventsWritten?(): Promise<void>;
  /** Tool calls that wait for a person, and the decisions a paused loop resumes with (tool-approvals.ts). */
  approval?: LoopApproval<Omit<LoopResult, 'paused'>>;
  /** The model's window: the history (`messages` but the last, the run's own) is fitted into it before each step. */
  context?: ContextOptions;
  /** The shape the final answer must have (structured-output.ts): asked for, validated, repaired once. */
  answer?: AnswerShape;
}

/**
 * Tool results are always JSON objects: other values are wrapped as `{ value }`. Every kind of tool
 * (MCP, A2A, delegation, skills, memory) answers through here, so this is where a result past the
 * JSON bounds (src/json-bounds.ts) becomes a failed call, before the run's events or the next prompt
 * serialise it.
 */
function asResultObject(value: unknown): Record<string, unknown> {
  const unbounded = outOfBounds(value);
  if (unbounded) return { error: { code: 'invalid_tool_result', message: `the tool's result ${unbounded}` } };
  if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  return { value: value === undefined ? null : value };
}

function toolErrorResult(err: unknown, signal: AbortSignal, timedOut: boolean): Record<string, unknown> {
  if (timedOut) return { error: { code: 'tool_timeout', message: 'the tool did not answer in time' } };
  if (signal.aborted) return { error: { code: 'cancelled', message: 'the run was cancelled' } };
  if (err instanceof ToolError) return { error: { code: err.code, message: err.message } };
  return { error: { code: 'tool_failed', message: err instanceof Error ? err.message : String(err) } };
}

/**
 * The tool-calling loop: one model step at a time (`streamStep`, over the provider's `doStream`), so
 * that injected messages join at every step boundary, cancellation is checked between steps, and each
 * step is recorded. The step's tool calls run together once it has ended; their failures, and calls
 * the model got wrong, go back to the model as results.
 */
export async function runLoop<A extends ToolAgent>(input: LoopInput<A>): Promise<LoopResult> {
  // A loop resumed after a pause goes on from its prompt and result as they were.
  const resumed = input.approval?.resume;
  const prompt: LanguageModelV3Prompt = resumed ? resumed.pause.prompt : [];
  if (input.system && !resumed) prompt.push({ role: 'system', content: input.system });
  if (!resumed) for (const m of input.messages) prompt.push(...turnMessages(m));
  const result: LoopResult = resumed
    ? { ...resumed.pause.result, finish: 'stop' }
    : {
        output: '',
        steps: [],
        toolCalls: [],
        usage: { inputTokens: 0, outputTokens: 0 },
        finish: 'stop',
        warnings: [],
      };

  const fitter = input.context ? new ContextFitter(input.context, input.messages.slice(0, -1)) : undefined;
  if (fitter) result.summaryUsage = Object.assign(fitter.usage, result.summaryUsage);
  let repairs = 0;
  /** The step's prompt fitted; history left out unsummarised is told once, and marks the run. */
  const fitted = async (f: ContextFitter) => {
    const out = await f.fit(prompt, input.signal);
    const truncation = f.takeTruncation();
    if (truncation) {
      result.contextTruncated = true;
      input.onEvent({ event: 'context_truncated', data: truncation });
    }
    return out;
  };

  const choices: ModelChoice[] = [
    { id: input.modelId ?? 'model', model: input.model, retry: input.retry ?? DEFAULT_RETRY_POLICY, timeouts: input.timeouts },
    ...(input.fallbacks ?? []),
  ].map((c) => (input.watchModel ? { ...c, watch: input.watchModel(c.id) } : c));
  const toolsByName = new Map(input.tools.map((t) => [t.name, t]));
  const toolNames = new Set(toolsByName.keys());
  const toolDefinitions: LanguageModelV3FunctionTool[] | undefined = input.tools.length
    ? input.tools.map((t) => ({ type: 'function', name: t.name, description: t.description, inputSchema: t.inputSchema as JSONSchema7 }))
    : undefined;

  /** Runs one call (or records why it cannot run) and answers what goes back to the model. */
  const runTool = async (call: StepToolCall): Promise<LanguageModelV3ToolResultPart> => {
    const record: ToolCallRecord = {
      id: call.toolCallId,
      name: call.toolName,
      input: call.input,
      result: null,
      startedAt: now(),
      completedAt: null,
    };
    result.toolCalls.push(record);
    input.onEvent({ event: 'tool_call_start', data: { id: record.id, name: record.name, input: record.input } });
    const tool = toolsByName.get(call.toolName);
    // What the model got wrong: an unknown tool, input that is not JSON, or input its schema refuses.
    const invalid = call.invalid ?? (tool ? invalidToolInput(tool, call.input) : `unknown tool ${call.toolName}`);
    let value: Record<string, unknown>;
    if (invalid !== undefined || !tool) {
      value = { error: { code: 'invalid_tool_call', message: invalid } };
    } else {
      await input.toolEventsWritten?.();
      const timeout = AbortSignal.timeout(input.toolTimeoutMs);
      const signal = AbortSignal.any([input.signal, timeout]);
      try {
        // Race the tool against the signal so a tool that ignores it still cannot hold the run.
        value = asResultObject(
          await new Promise((resolve, reject) => {
            const onAbort = () => reject(signal.reason);
            if (signal.aborted) return onAbort();
            signal.addEventListener('abort', onAbort, { once: true });
            tool
              .execute(call.input, { ...input.toolContext, signal, toolCallId: call.toolCallId })
              .then(resolve, reject)
              .finally(() => signal.removeEventListener('abort', onAbort));
          }),
        );
      } catch (err) {
        value = toolErrorResult(err, input.signal, timeout.aborted && !input.signal.aborted);
      }
    }
    record.result = value;
    record.completedAt = now();
    input.onEvent({ event: 'tool_call_end', data: { id: record.id, result: value } });
    return {
      type: 'tool-result',
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      // The model is told what was wrong with its call in words, as the AI SDK did.
      output: invalid !== undefined ? { type: 'error-text', value: invalid } : { type: 'json', value: value as JSONValue },
    };
  };

  if (resumed) {
    // The paused step's calls: approved ones run now (with any edited arguments), rejected ones answer the reason.
    prompt.push({ role: 'tool', content: await resumedCalls(resumed, runTool, result.toolCalls, (e) => input.onEvent(e)) });
    if (input.signal.aborted) {
      result.finish = 'cancelled';
      return result;
    }
  }

  // Messages drained after the model had answered; they open the next step.
  let carried: string[] = [];
  for (let index = resumed?.pause.nextStep ?? 0; index < input.maxSteps; index++) {
    if (input.signal.aborted) {
      result.finish = 'cancelled';
      return result;
    }
    const injected = [...carried, ...input.drainInbox()];
    carried = [];
    for (const text of injected) prompt.push(turn('user', text));

    const step: StepRecord = {
      index,
      text: '',
      toolCallIds: [],
      injected,
      finishReason: 'stop',
      usage: { inputTokens: 0, outputTokens: 0 },
      startedAt: now(),
      completedAt: null,
    };
    result.steps.push(step);
    let output: StepOutput;
    try {
      ({ output } = await streamStepWithFallbacks(
        choices,
        {
          options: {
            prompt: fitter ? await fitted(fitter) : prompt,
            responseFormat: input.answer?.callOption,
            tools: toolDefinitions,
            toolChoice: toolDefinitions ? { type: 'auto' } : undefined,
            maxOutputTokens: input.maxTokens,
            temperature: input.temperature,
            abortSignal: input.signal,
          },
          toolNames,
        },
        {
          onText: (text) => {
            step.text += text;
            result.output += text;
            input.onEvent({ event: 'token', data: { text } });
          },
          cutRestarts: input.cutRestarts,
          onCut: (cut) => {
            // Followers of the events learn what their tokens so far were, and that the step's tokens start again (or not).
            const partial = step.text;
            input.onEvent({ event: 'answer_cut', data: { ...cut, model: step.model ?? choices[0].id, partial } });
            if (cut.next === 'fail') return;
            result.output = result.output.slice(0, result.output.length - partial.length);
            step.text = '';
          },
        },
        { breakers: input.breakers, onModel: (model) => (step.model = model), onRetry: input.onRetry },
      ));
    } catch (err) {
      if (input.signal.aborted) {
        result.finish = 'cancelled';
        return result;
      }
      if (err instanceof ProviderError) throw new ModelCallError(err.message, result, err.code, err.detail);
      throw new ModelCallError(errorMessage(err), result);
    }
    step.completedAt = now();
    for (const w of [...(fitter?.warnings ?? []), ...output.warnings]) if (!result.warnings.includes(w)) result.warnings.push(w);
    step.finishReason = output.finishReason;
    step.usage = output.usage;
    result.usage.inputTokens += output.usage.inputTokens;
    result.usage.outputTokens += output.usage.outputTokens;
    if (input.signal.aborted) {
      result.finish = 'cancelled';
      return result;
    }
    if (output.error !== undefined) {
      throw new ModelCallError(output.errorMessage ?? errorMessage(output.error), result, output.errorCode, output.errorDetail);
    }

    // Tools run once the step has ended well: a step cut off (length, content filter) may hold a
    // call that was never finished. A step that ends with `stop` after calling tools (some local
    // servers say so) still gets their results, as `tool-calls` would.
    const calls =
      output.finishReason === 'tool-calls' || output.finishReason === 'stop' ? output.toolCalls.filter((c) => !c.providerExecuted) : [];
    for (const call of calls) step.toolCallIds.push(call.toolCallId);
    const waiting = waitingCalls(input.approval, calls, toolsByName);
    if (waiting) {
      // A person decides first: the calls needing nobody run now, then the loop pauses with what resuming needs.
      const settled = await Promise.all(calls.map((c, i) => (waiting[i] === undefined ? runTool(c) : undefined)));
      if (input.signal.aborted) {
        result.finish = 'cancelled';
        return result;
      }
      if (output.message.content.length) prompt.push(output.message);
      result.finish = 'awaiting_approval';
      result.paused = { prompt, nextStep: index + 1, calls: calls.map((call, i) => ({ call, reason: waiting[i], result: settled[i] })) };
      return result;
    }
    const toolResults = await Promise.all(calls.map(runTool));
    if (toolResults.length) await input.toolEventsWritten?.();
    if (input.signal.aborted) {
      result.finish = 'cancelled';
      return result;
    }
    if (output.message.content.length) prompt.push(output.message);
    // The model called tools: it gets their results in the next step.
    if (toolResults.length) {
      prompt.push({ role: 'tool', content: toolResults });
      continue;
    }
    // An answer the model did not end itself (its output limit, a content filter) is no answer to check.
    const cutOff = step.finishReason !== 'stop' && step.finishReason !== 'tool-calls';
    if (cutOff && !input.answer) {
      // Kept as the answer, but never silently: the run's finishReason and a warning say it is cut off.
      const warning =
        step.finishReason === 'length'
          ? `the answer was cut off at the output limit${input.maxTokens ? ` of ${input.maxTokens} tokens` : ''}: it may be incomplete`
          : `the model provider cut the answer off (finish reason ${step.finishReason}): it may be incomplete`;
      if (!result.warnings.includes(warning)) result.warnings.push(warning);
      result.finish = 'length';
      return result;
    }
    // The model answered; a message injected meanwhile still gets its turn.
    carried = cutOff ? [] : input.drainInbox();
    if (!carried.length) {
      if (input.answer) {
        const checked = cutOff ? { error: cutOffError(step.finishReason, input.maxTokens) } : input.answer.check(step.text);
        if ('error' in checked) {
          // One repair attempt: the model is told what was wrong.
          if (repairs++ > 0) throw new ModelCallError(checked.error, result, 'invalid_output');
          prompt.push(turn('user', input.answer.repairPrompt(checked.error)));
          continue;
        }
        result.structuredOutput = checked.value;
        result.output = step.text;
      }
      result.finish = 'stop';
      return result;
    }
  }
  result.finish = 'max_steps';
  return result;
}

/** Why an answer the model did not end itself cannot be the structured answer; its repair asks for a shorter one. */
function cutOffError(finishReason: string, maxTokens: number | undefined): string {
  if (finishReason === 'length')
    return `the answer was cut off at the output limit${maxTokens ? ` of ${maxTokens} tokens` : ''} before it was complete; a shorter answer is needed`;
  return `the answer was cut off by the model provider (finish reason ${finishReason}) before it was complete`;
}

function turn(role: ConversationTurn['role'], text: string): LanguageModelV3Prompt[number] {
  return { role, content: [{ type: 'text', text }] };
}

/** Providers report some failures as plain objects ({ type, message }) rather than Errors. */
function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && typeof (err as { message?: unknown }).message === 'string')
    return (err as { message: string }).message;
  return typeof err === 'string' ? err : JSON.stringify(err);
}
