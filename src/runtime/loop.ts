import type { LanguageModelV3 } from '@ai-sdk/provider';
import { jsonSchema, streamText, tool, type ModelMessage, type ToolSet as AiToolSet } from 'ai';
import { ToolError, type RuntimeTool, type ToolContext } from './tools/types.js';

/** The events a run streams (CONTRACT.md "Executions and streaming"), minus `done`/`error`. */
export type LoopEvent =
  | { event: 'token'; data: { text: string } }
  | { event: 'tool_call_start'; data: { id: string; name: string; input: unknown } }
  | { event: 'tool_call_end'; data: { id: string; result: Record<string, unknown> } };

export interface ToolCallRecord {
  id: string;
  name: string;
  input: unknown;
  result: Record<string, unknown> | null;
  startedAt: string;
  completedAt: string | null;
}

export interface StepRecord {
  index: number;
  text: string;
  toolCallIds: string[];
  /** User messages injected before this step. */
  injected: string[];
  finishReason: string;
  usage: { inputTokens: number; outputTokens: number };
}

export interface LoopResult {
  output: string;
  steps: StepRecord[];
  toolCalls: ToolCallRecord[];
  usage: { inputTokens: number; outputTokens: number };
  /** How the loop ended: stop (answered), max_steps, length (token cap), cancelled. */
  finish: 'stop' | 'max_steps' | 'length' | 'cancelled';
}

/** Thrown when the model call fails; carries what was produced before the failure. */
export class ModelCallError extends Error {
  constructor(
    message: string,
    readonly partial: LoopResult,
  ) {
    super(message);
  }
}

export interface LoopInput {
  model: LanguageModelV3;
  system?: string;
  messages: ModelMessage[];
  tools: RuntimeTool[];
  toolContext: Omit<ToolContext, 'signal'>;
  maxSteps: number;
  maxTokens?: number;
  temperature?: number;
  toolTimeoutMs: number;
  signal: AbortSignal;
  /** Messages injected while the run is going; drained at each step boundary. */
  drainInbox(): string[];
  onEvent(e: LoopEvent): void;
}

/** Tool results are always JSON objects: other values are wrapped as `{ value }`. */
export function asResultObject(value: unknown): Record<string, unknown> {
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
 * The tool-calling loop: one model step at a time (AI SDK `streamText`, one step per call), so that
 * injected messages join at every step boundary, cancellation is checked between steps, and each step
 * is recorded. Tools run through the AI SDK; their failures go back to the model as results.
 */
export async function runLoop(input: LoopInput): Promise<LoopResult> {
  const messages = [...input.messages];
  const result: LoopResult = { output: '', steps: [], toolCalls: [], usage: { inputTokens: 0, outputTokens: 0 }, finish: 'stop' };
  const byId = new Map<string, ToolCallRecord>();

  const aiTools: AiToolSet = {};
  for (const t of input.tools) {
    aiTools[t.name] = tool({
      description: t.description,
      inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (args: unknown, { toolCallId }) => {
        const record: ToolCallRecord = { id: toolCallId, name: t.name, input: args, result: null, startedAt: new Date().toISOString(), completedAt: null };
        byId.set(toolCallId, record);
        result.toolCalls.push(record);
        input.onEvent({ event: 'tool_call_start', data: { id: toolCallId, name: t.name, input: args } });
        const timeout = AbortSignal.timeout(input.toolTimeoutMs);
        const signal = AbortSignal.any([input.signal, timeout]);
        let value: Record<string, unknown>;
        try {
          // Race the tool against the signal so a tool that ignores it still cannot hold the run.
          value = asResultObject(
            await new Promise((resolve, reject) => {
              const onAbort = () => reject(signal.reason);
              if (signal.aborted) return onAbort();
              signal.addEventListener('abort', onAbort, { once: true });
              t.execute(args, { ...input.toolContext, signal }).then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
            }),
          );
        } catch (err) {
          value = toolErrorResult(err, input.signal, timeout.aborted && !input.signal.aborted);
        }
        record.result = value;
        record.completedAt = new Date().toISOString();
        input.onEvent({ event: 'tool_call_end', data: { id: toolCallId, result: value } });
        return value;
      },
    });
  }
  const hasTools = input.tools.length > 0;

  // Messages drained after the model had answered; they open the next step.
  let carried: string[] = [];
  for (let index = 0; index < input.maxSteps; index++) {
    if (input.signal.aborted) {
      result.finish = 'cancelled';
      return result;
    }
    const injected = [...carried, ...input.drainInbox()];
    carried = [];
    for (const text of injected) messages.push({ role: 'user', content: text });

    const step: StepRecord = { index, text: '', toolCallIds: [], injected, finishReason: 'stop', usage: { inputTokens: 0, outputTokens: 0 } };
    result.steps.push(step);
    let failure: unknown;
    const stream = streamText({
      model: input.model,
      system: input.system,
      messages,
      tools: hasTools ? aiTools : undefined,
      maxOutputTokens: input.maxTokens,
      temperature: input.temperature,
      abortSignal: input.signal,
      maxRetries: 1,
      onError: ({ error }) => {
        failure ??= error;
      },
    });
    let aborted = false;
    for await (const part of stream.fullStream) {
      switch (part.type) {
        case 'text-delta':
          if (part.text) {
            step.text += part.text;
            result.output += part.text;
            input.onEvent({ event: 'token', data: { text: part.text } });
          }
          break;
        case 'tool-call':
          step.toolCallIds.push(part.toolCallId);
          break;
        case 'tool-error': {
          // Tool input the model got wrong (schema mismatch, unknown tool): recorded like a failed call.
          if (!byId.has(part.toolCallId)) {
            const record: ToolCallRecord = {
              id: part.toolCallId,
              name: part.toolName,
              input: part.input,
              result: { error: { code: 'invalid_tool_call', message: String((part.error as Error)?.message ?? part.error) } },
              startedAt: new Date().toISOString(),
              completedAt: new Date().toISOString(),
            };
            byId.set(part.toolCallId, record);
            result.toolCalls.push(record);
            input.onEvent({ event: 'tool_call_start', data: { id: record.id, name: record.name, input: record.input } });
            input.onEvent({ event: 'tool_call_end', data: { id: record.id, result: record.result! } });
          }
          break;
        }
        case 'finish-step':
          step.finishReason = part.finishReason;
          step.usage = { inputTokens: part.usage.inputTokens ?? 0, outputTokens: part.usage.outputTokens ?? 0 };
          result.usage.inputTokens += step.usage.inputTokens;
          result.usage.outputTokens += step.usage.outputTokens;
          break;
        case 'abort':
          aborted = true;
          break;
        case 'error':
          failure ??= part.error;
          break;
      }
    }
    if (aborted || input.signal.aborted) {
      result.finish = 'cancelled';
      return result;
    }
    if (failure) {
      const message = failure instanceof Error ? failure.message : String(failure);
      throw new ModelCallError(message, result);
    }
    const response = await stream.response;
    messages.push(...response.messages);

    if (step.finishReason === 'tool-calls') continue;
    if (step.finishReason === 'length') {
      result.finish = 'length';
      return result;
    }
    // The model answered; a message injected meanwhile still gets its turn.
    carried = input.drainInbox();
    if (!carried.length) {
      result.finish = 'stop';
      return result;
    }
  }
  result.finish = 'max_steps';
  return result;
}
