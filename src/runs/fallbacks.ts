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
