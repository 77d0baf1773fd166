import type { PriceTable } from '../runtime/models/prices.js';
import { estimateTokens } from '../runtime/context/tokens.js';
import type { StartRunInput } from './types.js';

/** A step's output when neither the run, the agent nor the model's window bounds it: a common provider default. */
const UNBOUNDED_OUTPUT_TOKENS = 4_096;
/**
 * A step's prompt beyond what the start knows (the conversation's history, tool results, prompt
 * sections) when no model of the run has a window that bounds it: an estimate, not a bound.
 */
const UNBOUNDED_PROMPT_TOKENS = 8_192;

/**
 * A run's worst-case cost in USD, reserved against its budgets at admission (docs/operations.md,
 * "Limits and budgets"): every one of the agent's `maxSteps` steps sends the largest prompt its
 * window takes and answers the most tokens it may, at the dearest price among the models its steps
 * may use (the agent's and its fallbacks). A model's window bounds the prompt (the context fitting
 * keeps it within the tightest one); without any window the prompt is what the start knows plus
 * UNBOUNDED_PROMPT_TOKENS. 0 when the models have no price: nothing is reserved for a free run.
 */
export function worstCaseCost(prices: PriceTable, input: StartRunInput): number {
  const agent = input.agent;
  const models = [agent.model, ...agent.configuration.fallbackModels];
  let inputPrice = 0;
  let outputPrice = 0;
  let prompt: number | undefined;
  let reserve = 0;
  for (const model of models) {
    const price = prices.priceOf(model);
    inputPrice = Math.max(inputPrice, price.input);
    outputPrice = Math.max(outputPrice, price.output);
    const window = prices.windowOf(model);
    if (window) {
      prompt = Math.min(prompt ?? Number.POSITIVE_INFINITY, window.contextWindow - window.outputReserve);
      reserve = Math.max(reserve, window.outputReserve);
    }
  }
  if (inputPrice === 0 && outputPrice === 0) return 0;
  const output = input.maxTokens ?? agent.configuration.maxTokens ?? (reserve || UNBOUNDED_OUTPUT_TOKENS);
  prompt ??= startPromptTokens(input) + UNBOUNDED_PROMPT_TOKENS;
  const perStep = prompt * inputPrice + output * outputPrice;
  return Math.round(agent.configuration.maxSteps * perStep * 1000) / 1e9;
}

/** The prompt's tokens the start knows of: the agent's prompts, the caller's instructions, history and message. */
function startPromptTokens(input: StartRunInput): number {
  const texts = [input.agent.systemPrompt, input.agent.contextPrompt, input.instructions, input.content, input.modelContext];
  let tokens = 0;
  for (const text of texts) if (text) tokens += estimateTokens(text);
  for (const turn of input.history ?? []) tokens += estimateTokens(turn.content);
  return tokens;
}
