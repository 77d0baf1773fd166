import { Type, type Static } from 'typebox';
import { Nullable } from '../http/schemas.js';

export const ModelOffer = Type.Object(
  {
    id: Type.String({
      description: 'provider/model-name, what an agent’s model (or fallbackModels, summaryModel) takes',
      examples: ['openai/gpt-4o-mini'],
    }),
    provider: Type.String({ description: 'openai, anthropic, openai-compatible or builtin' }),
    name: Type.String({ description: 'the model’s name at its provider' }),
    usable: Type.Boolean({ description: 'whether a run can call it now: its provider is configured on this server' }),
    unavailableReason: Nullable(Type.String({ description: 'why it is not usable (the variable to set); null when usable' })),
    default: Type.Boolean({ description: 'the server’s DEFAULT_MODEL, which an agent created without a model gets' }),
    price: Nullable(
      Type.Object(
        {
          input: Type.Number({ description: 'USD per million input tokens' }),
          output: Type.Number({ description: 'USD per million output tokens' }),
        },
        { description: 'from the price table (built in, MODEL_PRICES laid over it); null when the table does not know the model' },
      ),
    ),
    contextWindow: Nullable(Type.Integer({ description: 'tokens; null when the price table gives none' })),
  },
  { title: 'Model offered by this server' },
);
export type ModelOffer = Static<typeof ModelOffer>;

export const ModelList = Type.Object({
  models: Type.Array(ModelOffer, { description: 'builtin/echo first, then by provider and name' }),
  defaultModel: Type.String({ description: 'DEFAULT_MODEL' }),
});
export type ModelList = Static<typeof ModelList>;
