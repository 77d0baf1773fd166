import type { FastifyPluginAsync } from 'fastify';
import { codeRoutes } from './routes.js';
import type { CodeService } from './service.js';

export interface CodePluginOptions {
  code: CodeService;
  /** Closes the sandbox (its warm processes) when the app closes. */
  close: () => Promise<void>;
}

/**
 * The code domain's routes: /api/v1/code/settings. Its tools reach runs as its contribution
 * (createCodeDomain); the sandbox's processes stop with the app.
 */
export const codePlugin: FastifyPluginAsync<CodePluginOptions> = async (app, { code, close }) => {
  await app.register(codeRoutes, { code });
  app.addHook('onClose', close);
};
