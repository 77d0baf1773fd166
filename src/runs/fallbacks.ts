import type { ModelChoice } from '../runtime/fallback-step.js';
import type { PriceTable } from '../runtime/models/prices.js';
import type { ModelRegistry } from '../runtime/models/registry.js';

/**
 * An agent's fallback models as a run's steps may turn to them (runtime/fallback-step.ts), in order.
 * One this server cannot use (its provider's configuration removed since the agent was saved) is
 * left out, and the run's warnings say so.
 */
export function fallbackChoices(models: ModelRegistry, fallbackModels: readonly string[]): { choices: ModelChoice[]; warnings: string[] } {
  const choices: ModelChoice[] = [];
  const warnings: string[] = [];
  for (const id of fallbackModels) {
    const unavailable = models.unavailable(id);
    if (unavailable) warnings.push(`fallback model ${id} left out: ${unavailable}`);
    else choices.push(models.choice(id));
  }
  return { choices, warnings };
}

/** What the models that served a run did in it: each model's steps, tokens and cost (the metrics' labels, runs/observer.ts). */
export interface ModelUsage {
  model: string;
  steps: number;
  inputTokens: number;
  outputTokens: number;
  cost: number;
}

/**
 * A run's steps, tokens and cost by the model that served each (a fallback when it answered, the
 * summary model for summarising the history: context/fit.ts), so none is charged to the agent's model.
 */
export function usageByModel(
  prices: PriceTable,
  runModel: string,
  steps: readonly { model?: string; usage: { inputTokens: number; outputTokens: number } }[],
  summary: { model: string; usage: { inputTokens: number; outputTokens: number } | undefined },
): ModelUsage[] {
  const byModel = new Map<string, ModelUsage>();
  const add = (model: string, usage: { inputTokens: number; outputTokens: number }, steps: number) => {
    let entry = byModel.get(model);
    if (!entry) {
      entry = { model, steps: 0, inputTokens: 0, outputTokens: 0, cost: 0 };
      byModel.set(model, entry);
    }
    entry.steps += steps;
    entry.inputTokens += usage.inputTokens;
    entry.outputTokens += usage.outputTokens;
    entry.cost = Math.round((entry.cost + prices.cost(model, usage.inputTokens, usage.outputTokens)) * 1e9) / 1e9;
  };
  for (const step of steps) add(step.model ?? runModel, step.usage, 1);
  if (summary.usage && (summary.usage.inputTokens || summary.usage.outputTokens)) add(summary.model, summary.usage, 0);
  return [...byModel.values()];
}

/**
 * A run's cost: each step at the price of the model that answered it (a fallback's price may not be
 * the agent's model's), rounded as PriceTable.cost rounds, so sums do not drift.
 */
export function stepsCost(
  prices: PriceTable,
  runModel: string,
  steps: readonly { model?: string; usage: { inputTokens: number; outputTokens: number } }[],
): number {
  let cost = 0;
  for (const step of steps) cost += prices.cost(step.model ?? runModel, step.usage.inputTokens, step.usage.outputTokens);
  return Math.round(cost * 1e9) / 1e9;
}
