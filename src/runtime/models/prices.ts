/** USD per million tokens. */
export interface Price {
  input: number;
  output: number;
}

/**
 * Default list prices of common models (USD per 1M tokens, as published by the providers; override
 * or extend with MODEL_PRICES). Unknown models cost 0 and the run says so in its cost being 0.
 */
const DEFAULT_PRICES: Record<string, Price> = {
  'builtin/echo': { input: 0, output: 0 },
  'openai/gpt-4o': { input: 2.5, output: 10 },
  'openai/gpt-4o-mini': { input: 0.15, output: 0.6 },
  'openai/gpt-4.1': { input: 2, output: 8 },
  'openai/gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'openai/gpt-4.1-nano': { input: 0.1, output: 0.4 },
  'openai/o4-mini': { input: 1.1, output: 4.4 },
  'openai/o3': { input: 2, output: 8 },
  'anthropic/claude-opus-4-1': { input: 15, output: 75 },
  'anthropic/claude-sonnet-4-5': { input: 3, output: 15 },
  'anthropic/claude-sonnet-4-0': { input: 3, output: 15 },
  'anthropic/claude-3-7-sonnet-latest': { input: 3, output: 15 },
  'anthropic/claude-3-5-haiku-latest': { input: 0.8, output: 4 },
  'anthropic/claude-haiku-4-5': { input: 1, output: 5 },
};

export class PriceTable {
  private readonly prices: Record<string, Price>;

  constructor(overrides: Record<string, Price> = {}) {
    this.prices = { ...DEFAULT_PRICES, ...overrides };
  }

  priceOf(model: string): Price {
    return this.prices[model] ?? { input: 0, output: 0 };
  }

  /** Cost in USD, rounded to a billionth of a dollar so sums do not drift. */
  cost(model: string, inputTokens: number, outputTokens: number): number {
    const p = this.priceOf(model);
    return Math.round((inputTokens * p.input + outputTokens * p.output) * 1000) / 1e9;
  }
}
