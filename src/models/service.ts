import { parseModelId } from '../runtime/models/model-id.js';
import type { PriceTable } from '../runtime/models/prices.js';
import type { ModelRegistry } from '../runtime/models/registry.js';
import type { ModelList, ModelOffer } from './schemas.js';

/**
 * The models this server offers (docs/models.md, "The models this server offers"): builtin/echo, every
 * model the price table knows whose provider is configured, and DEFAULT_MODEL (marked unusable when its
 * provider is not). A provider takes any model name, so the list is a menu, not a limit.
 */
export interface ModelCatalogOptions {
  /** The configured providers (runtime's registry): whether a model can be used here. */
  registry: Pick<ModelRegistry, 'unavailable'>;
  prices: PriceTable;
  /** DEFAULT_MODEL. */
  defaultModel: string;
}

export class ModelCatalog {
  private readonly registry: Pick<ModelRegistry, 'unavailable'>;
  private readonly prices: PriceTable;
  private readonly defaultModel: string;

  constructor({ registry, prices, defaultModel }: ModelCatalogOptions) {
    this.registry = registry;
    this.prices = prices;
    this.defaultModel = defaultModel;
  }

  list(): ModelList {
    const ids = new Set(['builtin/echo']);
    for (const model of this.prices.knownModels()) {
      // A model of a provider this server cannot reach is left out, not listed as unusable.
      if (typeof parseModelId(model) !== 'string' && this.registry.unavailable(model) === undefined) ids.add(model);
    }
    ids.add(this.defaultModel);
    const models = [...ids].flatMap((id) => this.offer(id) ?? []);
    models.sort((a, b) => rank(a) - rank(b) || a.provider.localeCompare(b.provider) || a.name.localeCompare(b.name));
    return { models, defaultModel: this.defaultModel };
  }

  private offer(id: string): ModelOffer | undefined {
    const parsed = parseModelId(id);
    if (typeof parsed === 'string') return undefined;
    const unavailableReason = this.registry.unavailable(id) ?? null;
    return {
      id,
      provider: parsed.provider,
      name: parsed.name,
      usable: unavailableReason === null,
      unavailableReason,
      default: id === this.defaultModel,
      price: this.prices.knownPriceOf(id) ?? null,
      contextWindow: this.prices.windowOf(id)?.contextWindow ?? null,
    };
  }
}

const rank = (m: ModelOffer) => (m.provider === 'builtin' ? 0 : 1);
