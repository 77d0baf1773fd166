import type { FastifyPluginAsync } from 'fastify';
import { openaiCompatPlugin } from './plugin.js';
import type { OpenAiCompatOptions } from './service.js';

export interface OpenAiCompatDomain {
  /** The routes under /v1; the domain keeps no state and runs nothing in the background. */
  plugin: FastifyPluginAsync;
}

/** Builds the OpenAI-compatible endpoint: agents as models, each completion a run. */
export function createOpenAiCompatDomain(options: OpenAiCompatOptions): OpenAiCompatDomain {
  return { plugin: (app) => openaiCompatPlugin(app, options) };
}
