import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { ModelChoice } from '../fallback-step.js';
import { MessagesEndpoint } from './anthropic-messages.js';
import { BreakerBoard, type BreakerSettings, DEFAULT_BREAKER_SETTINGS } from './breaker.js';
import { ChatCompletionsServer } from './chat-completions.js';
import { EchoLanguageModel } from './echo.js';
import { parseModelId } from './model-id.js';
import { ResponsesEndpoint } from './responses.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retries.js';
import { DEFAULT_MODEL_TIMEOUTS, type ModelTimeouts } from './timeouts.js';

/** How to reach a provider, and how its failed calls are retried (the defaults when unset). */
interface ProviderAccess {
  apiKey?: string;
  baseUrl?: string;
  retry?: RetryPolicy;
}

/** How to reach each provider (from configuration: config.ts fills it from the environment). */
export interface ProviderSettings {
  openai: ProviderAccess;
  anthropic: ProviderAccess;
  /** Any server speaking the OpenAI API: Ollama, vLLM, LM Studio, llama.cpp server. */
  openaiCompatible: ProviderAccess;
  /** When a model is skipped on a sustained failure rate of its calls (models/breaker.ts); the defaults when unset. */
  breaker?: BreakerSettings;
  /** How long a model call's attempt may take: every model's, then per model (`provider/name`) overrides, field by field. */
  timeouts?: { defaults: ModelTimeouts; models: Record<string, Partial<ModelTimeouts>> };
}

/** How many provider models a registry keeps built (model ids come from agents' configuration, so they are bounded here). */
const MAX_CACHED_MODELS = 256;

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
  private openaiStreams?: ResponsesEndpoint;
  private anthropic?: ReturnType<typeof createAnthropic>;
  private anthropicStreams?: MessagesEndpoint;
  private compatible?: ReturnType<typeof createOpenAICompatible>;
  private compatibleServer?: ChatCompletionsServer;
  /**
   * Provider models built, by `provider/name`: a model builds its response schemas when made and zod
   * compiles a schema on its first parse, so a model made per call paid both on every call.
   */
  private readonly built = new Map<string, LanguageModelV3>();

  /** This process's breakers, one per model (`provider/name`). */
  readonly breakers: BreakerBoard;

  constructor(private readonly settings: ProviderSettings) {
    this.breakers = new BreakerBoard(settings.breaker ?? DEFAULT_BREAKER_SETTINGS);
  }

  /** Why `model` cannot be used with this configuration (an unknown id, a provider not configured), or undefined. */
  unavailable(model: string): string | undefined {
    try {
      this.resolve(model);
      return undefined;
    } catch (err) {
      if (err instanceof ModelUnavailableError) return err.message;
      throw err;
    }
  }

  /** A model a step may turn to: resolved, with its provider's retry policy. */
  choice(model: string): ModelChoice {
    return { id: model, model: this.resolve(model), retry: this.retryPolicy(model), timeouts: this.timeoutsOf(model) };
  }

  /** How long an attempt of `model` may take; undefined for `builtin/*`, answered in this process. */
  timeoutsOf(model: string): ModelTimeouts | undefined {
    if (model.startsWith('builtin/')) return undefined;
    const configured = this.settings.timeouts;
    return { ...(configured?.defaults ?? DEFAULT_MODEL_TIMEOUTS), ...configured?.models[model] };
  }

  /** The retry policy of the model's provider (`builtin/echo` and unknown ids get the defaults). */
  retryPolicy(model: string): RetryPolicy {
    const id = parseModelId(model);
    if (typeof id === 'string' || id.provider === 'builtin') return DEFAULT_RETRY_POLICY;
    const provider = id.provider === 'openai-compatible' ? this.settings.openaiCompatible : this.settings[id.provider];
    return provider.retry ?? DEFAULT_RETRY_POLICY;
  }

  resolve(model: string): LanguageModelV3 {
    const cached = this.built.get(model);
    if (cached) return cached;
    const resolved = this.build(model);
    if (resolved === this.echo) return resolved;
    if (this.built.size >= MAX_CACHED_MODELS) this.built.delete(this.built.keys().next().value!);
    this.built.set(model, resolved);
    return resolved;
  }

  private build(model: string): LanguageModelV3 {
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
        // Streamed calls over node:http (responses.ts); the AI SDK's model builds their request and answers the others.
        this.openaiStreams ??= new ResponsesEndpoint();
        return this.openaiStreams.model(this.openai(id.name));
      }
      case 'anthropic': {
        if (!this.settings.anthropic.apiKey) {
          throw new ModelUnavailableError('model anthropic/* needs ANTHROPIC_API_KEY in the server configuration');
        }
        this.anthropic ??= createAnthropic({ apiKey: this.settings.anthropic.apiKey, baseURL: this.settings.anthropic.baseUrl });
        // Streamed calls over node:http (anthropic-messages.ts); the AI SDK's model builds their request and answers the others.
        this.anthropicStreams ??= new MessagesEndpoint();
        return this.anthropicStreams.model(this.anthropic(id.name));
      }
      case 'openai-compatible': {
        const { baseUrl, apiKey } = this.settings.openaiCompatible;
        if (!baseUrl) {
          throw new ModelUnavailableError(
            'model openai-compatible/* needs OPENAI_COMPATIBLE_BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama)',
          );
        }
        // Structured output asked natively (response_format json_schema: vLLM, Ollama, llama.cpp take it).
        this.compatible ??= createOpenAICompatible({
          name: 'openai-compatible',
          baseURL: baseUrl,
          apiKey,
          includeUsage: true,
          supportsStructuredOutputs: true,
        });
        // Streamed calls over node:http (chat-completions.ts); the AI SDK's model answers the others.
        this.compatibleServer ??= new ChatCompletionsServer({ name: 'openai-compatible', baseUrl, apiKey });
        return this.compatibleServer.model(id.name, this.compatible(id.name));
      }
    }
  }
}
