import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problems } from '../http/schemas.js';
import { RetentionSettings, type RetentionSettingsService } from '../tenancy/retention.js';

/** The tenant's retention settings (docs/operations.md, "Retention"): what the background sweep deletes and when. */
export const retentionRoutes: FastifyPluginAsyncTypebox<{ settings: RetentionSettingsService }> = async (app, { settings }) => {
  app.get(
    '/api/v1/retention',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'getRetention',
        tags: ['tenancy'],
        summary: 'The tenant’s retention settings: how long runs, conversations, files and audit events are kept',
        response: { 200: RetentionSettings, ...problems(401, 403) },
      },
    },
    async (req) => settings.get(req.principal.tenantId),
  );

  app.put(
    '/api/v1/retention',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'setRetention',
        tags: ['tenancy'],
        summary: 'Set the tenant’s retention (fields left out keep their value; null keeps forever). Export first: `agentry export`',
        body: Type.Partial(RetentionSettings, { additionalProperties: false }),
        response: { 200: RetentionSettings, ...problems(400, 401, 403) },
      },
    },
    async (req) => settings.set(req.principal.tenantId, req.body, req.principal.actor),
  );
};
