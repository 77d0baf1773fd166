import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { EchoLanguageModel } from './echo.js';
import { parseModelId } from './model-id.js';

/** How to reach each provider (from configuration: config.ts fills it from the environment). */
export interface ProviderSettings {
  openai: { apiKey?: string; baseUrl?: string };
  anthropic: { apiKey?: string; baseUrl?: string };
  /** Any server speaking the OpenAI API: Ollama, vLLM, LM Studio, llama.cpp server. */
  openaiCompatible: { apiKey?: string; baseUrl?: string };
}

/** A model that cannot be used as configured; the run fails with this code and message. */
export class ModelUnavailableError extends Error {
  readonly code = 'model_unavailable';
}

/**
 * Resolves `provider/name` to an AI SDK language model. Providers are created lazily, once, from
 * configuration; every model, `builtin/echo` included, goes through the same interface.
 */
export class ModelRegistry {
  private readonly echo = new EchoLanguageModel();
  private openai?: ReturnType<typeof createOpenAI>;
  private anthropic?: ReturnType<typeof createAnthropic>;
  private compatible?: ReturnType<typeof createOpenAICompatible>;

  constructor(private readonly settings: ProviderSettings) {}

  resolve(model: string): LanguageModelV3 {
    const id = parseModelId(model);
    if (typeof id === 'string') throw new ModelUnavailableError(`model ${model} ${id}`);
    switch (id.provider) {
      case 'builtin':
        return this.echo;
      case 'openai': {
        if (!this.settings.openai.apiKey && !this.settings.openai.baseUrl) {
          throw new ModelUnavailableError('model openai/* needs OPENAI_API_KEY (or OPENAI_BASE_URL) in the server configuration');
        }
        this.openai ??= createOpenAI({ apiKey: this.settings.openai.apiKey ?? 'unset', baseURL: this.settings.openai.baseUrl });
        return this.openai(id.name);
      }
      case 'anthropic': {
        if (!this.settings.anthropic.apiKey) {
          throw new ModelUnavailableError('model anthropic/* needs ANTHROPIC_API_KEY in the server configuration');
        }
        this.anthropic ??= createAnthropic({ apiKey: this.settings.anthropic.apiKey, baseURL: this.settings.anthropic.baseUrl });
        return this.anthropic(id.name);
      }
      case 'openai-compatible': {
        const { baseUrl, apiKey } = this.settings.openaiCompatible;
        if (!baseUrl) {
          throw new ModelUnavailableError('model openai-compatible/* needs OPENAI_COMPATIBLE_BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama)');
        }
        this.compatible ??= createOpenAICompatible({ name: 'openai-compatible', baseURL: baseUrl, apiKey, includeUsage: true });
        return this.compatible(id.name);
      }
    }
  }
}
