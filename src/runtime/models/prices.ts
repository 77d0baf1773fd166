/** USD per million tokens. */
export interface Price {
  input: number;
  output: number;
}

/** A model's context window and the part of it kept for its answer, in tokens (runtime/context/fit.ts). */
export interface ContextWindow {
  contextWindow: number;
  outputReserve: number;
}

/** What the table knows of a model: its price, and its window when known. */
export type ModelEntry = Price & Partial<ContextWindow>;

/** What MODEL_PRICES may say of a model: any of the entry's fields, laid over the built-in entry. */
export type ModelEntryOverride = Partial<ModelEntry>;

/**
 * Default list prices of common models (USD per 1M tokens, as published by the providers) and their
 * context windows with the output kept free in them (the provider's maximum output, capped at a
 * quarter of the window); override or extend with MODEL_PRICES. Unknown models cost 0 and the run
 * says so in its cost being 0; a model without a window is sent its history unfitted (memoryWindow
 * still bounds it). builtin/echo has none unless MODEL_PRICES gives it one (tests use a tiny one).
 */
const DEFAULT_PRICES: Record<string, ModelEntry> = {
  'builtin/echo': { input: 0, output: 0 },
  'openai/gpt-4o': { input: 2.5, output: 10, contextWindow: 128_000, outputReserve: 16_384 },
  'openai/gpt-4o-mini': { input: 0.15, output: 0.6, contextWindow: 128_000, outputReserve: 16_384 },
  'openai/gpt-4.1': { input: 2, output: 8, contextWindow: 1_047_576, outputReserve: 32_768 },
  'openai/gpt-4.1-mini': { input: 0.4, output: 1.6, contextWindow: 1_047_576, outputReserve: 32_768 },
  'openai/gpt-4.1-nano': { input: 0.1, output: 0.4, contextWindow: 1_047_576, outputReserve: 32_768 },
  'openai/o4-mini': { input: 1.1, output: 4.4, contextWindow: 200_000, outputReserve: 50_000 },
  'openai/o3': { input: 2, output: 8, contextWindow: 200_000, outputReserve: 50_000 },
  'anthropic/claude-opus-4-1': { input: 15, output: 75, contextWindow: 200_000, outputReserve: 32_000 },
  'anthropic/claude-sonnet-4-5': { input: 3, output: 15, contextWindow: 200_000, outputReserve: 50_000 },
  'anthropic/claude-sonnet-4-0': { input: 3, output: 15, contextWindow: 200_000, outputReserve: 50_000 },
  'anthropic/claude-3-7-sonnet-latest': { input: 3, output: 15, contextWindow: 200_000, outputReserve: 50_000 },
  'anthropic/claude-3-5-haiku-latest': { input: 0.8, output: 4, contextWindow: 200_000, outputReserve: 8_192 },
  'anthropic/claude-haiku-4-5': { input: 1, output: 5, contextWindow: 200_000, outputReserve: 50_000 },
};

export class PriceTable {
  private readonly prices: Record<string, ModelEntry>;

  constructor(overrides: Record<string, ModelEntryOverride> = {}) {
    this.prices = { ...DEFAULT_PRICES };
    // Field by field: an override giving only a window keeps the built-in price, and the other way round.
    for (const [model, entry] of Object.entries(overrides)) {
      const merged: ModelEntry = { ...(DEFAULT_PRICES[model] ?? { input: 0, output: 0 }), ...entry };
      // A new window without a reserve gets the default share of it, not the built-in window's reserve.
      if (entry.contextWindow !== undefined && entry.outputReserve === undefined) delete merged.outputReserve;
      this.prices[model] = merged;
    }
  }

  /** Every model the table knows (built in, or added by MODEL_PRICES), in no particular order. */
  knownModels(): string[] {
    return Object.keys(this.prices);
  }

  /** The model's price when the table knows it (priceOf answers 0 for an unknown one). */
  knownPriceOf(model: string): Price | undefined {
    const entry = this.prices[model];
    return entry ? { input: entry.input, output: entry.output } : undefined;
  }

  priceOf(model: string): Price {
    return this.prices[model] ?? { input: 0, output: 0 };
  }

  /** The model's window and output reserve, when known. */
  windowOf(model: string): ContextWindow | undefined {
    const entry = this.prices[model];
    if (!entry?.contextWindow) return undefined;
    const outputReserve = entry.outputReserve ?? Math.floor(entry.contextWindow / 4);
    return { contextWindow: entry.contextWindow, outputReserve: Math.min(outputReserve, entry.contextWindow - 1) };
  }

  /** Cost in USD, rounded to a billionth of a dollar so sums do not drift. */
  cost(model: string, inputTokens: number, outputTokens: number): number {
    const p = this.priceOf(model);
    return Math.round((inputTokens * p.input + outputTokens * p.output) * 1000) / 1e9;
  }
}
