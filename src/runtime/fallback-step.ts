import type { LanguageModelV3 } from '@ai-sdk/provider';
import { type AnswerCut, type StepHandlers, type StepModel, type StepOutput, type StepRequest, streamStep } from './model-step.js';
import { type BreakerBoard, BreakerOpenError } from './models/breaker.js';
import { ProviderError, type ProviderErrorCode, type RetryPolicy } from './models/retries.js';
import type { ModelTimeouts } from './models/timeouts.js';

/** A model a step may be answered by: the agent's own, then its fallbacks in order. */
export interface ModelChoice {
  /** `provider/name`: what the step records and what its breaker is keyed by. */
  id: string;
  model: LanguageModelV3;
  /** Its provider's retry policy. */
  retry: RetryPolicy;
  /** How long an attempt may take (models/timeouts.ts); none: no limit (the built-in echo model). */
  timeouts?: ModelTimeouts;
  /** Watches each attempt of its calls (tracing's spans); none: unwatched. */
  watch?: StepModel['watch'];
}

export interface StepAnswer {
  output: StepOutput;
  /** The model that answered (or the last one tried, when the step failed). */
  model: string;
}

/** A provider failure another model may not share; a request the provider refused (400) goes nowhere else. */
const fallsBack = (code: ProviderErrorCode | undefined) => code !== undefined && code !== 'provider_bad_request';

/** What a step over the choices is told: each process's breakers, and which model is being asked (recorded on the step). */
export interface FallbackOptions {
  breakers?: BreakerBoard;
  onModel?(model: string): void;
  /** Told of each retry of a model's call, with the model (`onRetry` of the handlers is not called: this is). */
  onRetry?(code: ProviderErrorCode, model: string): void;
}

/**
 * One step over the choices in order: a model whose breaker is open is skipped, one that fails for
 * good (its retries spent) before any text reached the client hands the step to the next. Once text
 * was streamed the step stays with its model, so the client never hears an answer twice. When every
 * choice failed, the error is the last model's, or the first real failure when the last was only skipped.
 */
export async function streamStepWithFallbacks(
  choices: readonly ModelChoice[],
  request: StepRequest,
  handlers: StepHandlers,
  fallback: FallbackOptions = {},
): Promise<StepAnswer> {
  const signal = request.options.abortSignal;
  let firstFailure: ProviderError | undefined;
  for (let i = 0; ; i++) {
    const choice = choices[i];
    const isLast = i === choices.length - 1;
    // Text told by this model's current attempt (an attempt cut and started over tells its cut, and counts no more).
    let emitted = false;
    const onText = (delta: string) => {
      emitted = true;
      handlers.onText(delta);
    };
    const onCut = (cut: AnswerCut) => {
      emitted = false;
      handlers.onCut?.(cut);
    };
    fallback.onModel?.(choice.id);
    try {
      const gate = fallback.breakers?.gate(choice.id);
      const onRetry = fallback.onRetry && ((code: ProviderErrorCode) => fallback.onRetry!(code, choice.id));
      const asked = { model: choice.model, retry: choice.retry, gate, timeouts: choice.timeouts, watch: choice.watch };
      const output = await streamStep(asked, request, { ...handlers, onText, onRetry, onCut });
      if (output.error === undefined || signal?.aborted) return { output, model: choice.id };
      const restarts = !emitted || handlers.cutRestarts;
      if (isLast || !restarts || !fallsBack(output.errorCode)) {
        if (emitted && output.errorCode)
          handlers.onCut?.({ code: output.errorCode, message: output.errorMessage ?? 'the provider failed', next: 'fail' });
        return { output, model: choice.id };
      }
      if (emitted) onCut({ code: output.errorCode!, message: output.errorMessage ?? 'the provider failed', next: 'fallback' });
      firstFailure ??= new ProviderError(output.errorCode!, output.errorMessage ?? 'the provider failed', { detail: output.errorDetail });
    } catch (err) {
      if (signal?.aborted || !(err instanceof ProviderError) || !fallsBack(err.code)) throw err;
      if (isLast) throw err instanceof BreakerOpenError && firstFailure ? firstFailure : err;
      if (!(err instanceof BreakerOpenError)) firstFailure ??= err;
    }
  }
}
