import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problems } from '../http/schemas.js';
import type { CodeService } from './service.js';
import { CodeSettingsInput, CodeSettingsView } from './settings.js';

/** The tenant's code execution limits (docs/code-execution.md, "Limits"), within the server's maxima. */
export const codeRoutes: FastifyPluginAsyncTypebox<{ code: CodeService }> = async (app, { code }) => {
  const view = async (limits: Awaited<ReturnType<CodeService['settings']['limits']>>) => {
    const availability = await code.availability();
    return {
      available: availability.available,
      unavailableReason: availability.available ? null : availability.reason,
      limits,
      maxima: code.settings.maxima,
    };
  };

  app.get(
    '/api/v1/code/settings',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'getCodeSettings',
        tags: ['code'],
        summary: 'Whether code runs here, the tenant’s code execution limits and the server’s maxima',
        response: { 200: CodeSettingsView, ...problems(401, 403) },
      },
    },
    async (req) => view(await code.settings.limits(req.principal.tenantId)),
  );

  app.put(
    '/api/v1/code/settings',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'setCodeSettings',
        tags: ['code'],
        summary: 'Set the tenant’s code execution limits (fields left out keep their value; null: the server’s maximum)',
        description: 'A value above the server’s maximum is a 400 naming the field and the maximum.',
        body: CodeSettingsInput,
        response: { 200: CodeSettingsView, ...problems(400, 401, 403) },
      },
    },
    async (req) => view(await code.settings.set(req.principal.tenantId, req.body, req.principal.actor)),
  );
};
