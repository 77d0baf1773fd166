import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { IdParams, Json, Nullable, PageQuery, Timestamp, problems } from '../http/schemas.js';
import { PERMISSIONS } from './permissions.js';
import { parsePermissions, type TenancyService } from './service.js';
import type { LimitsService } from './limits.js';
import { Limits, PermissionSchema } from './schemas.js';

const ApiKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  permissions: Type.Array(Type.String()),
  createdAt: Timestamp,
  rateLimitPerMinute: Nullable(
    Type.Integer({
      description: 'this key’s own requests per minute, the access tokens minted from it counted with it; null: the tenant’s',
    }),
  ),
  revokedAt: Nullable(Timestamp),
});

const LimitsView = Type.Evaluate(
  Type.Intersect([
    Limits,
    Type.Object({
      usage: Type.Object({
        month: Type.String(),
        spentUsd: Type.Number({ description: 'USD this month: the costs of the runs that have ended' }),
        reservedUsd: Type.Number({
          description: 'USD the runs still active hold of the budget: their worst-case cost beyond what they have cost',
        }),
        runningRuns: Type.Integer(),
      }),
    }),
  ]),
);
const AgentBudget = Type.Object({
  agentId: Type.String(),
  month: Type.String({ description: 'YYYY-MM (UTC)' }),
  monthlyBudgetUsd: Nullable(Type.Number()),
  spentUsd: Type.Number({ description: 'USD this month: the costs of the agent’s runs that have ended' }),
  reservedUsd: Type.Number({ description: 'USD the agent’s runs still active hold: their worst-case cost beyond what they have cost' }),
});

export const tenancyRoutes: FastifyPluginAsyncTypebox<{ tenancy: TenancyService; limits: LimitsService }> = async (
  app,
  { tenancy, limits },
) => {
  const limitsView = async (tenantId: string) => ({ ...(await limits.tenantLimits(tenantId)), usage: await limits.usage(tenantId) });

  app.get(
    '/api/v1/limits',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'getLimits',
        tags: ['tenancy'],
        summary: 'The tenant’s limits and budget, with this month’s usage',
        response: { 200: LimitsView, ...problems(401, 403) },
      },
    },
    async (req) => limitsView(req.principal.tenantId),
  );

  app.put(
    '/api/v1/limits',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'setLimits',
        tags: ['tenancy'],
        summary: 'Set the tenant’s limits and monthly budget (fields left out keep their value; null removes a limit)',
        body: Type.Partial(Limits, { additionalProperties: false }),
        response: { 200: LimitsView, ...problems(400, 401, 403) },
      },
    },
    async (req) => {
      await limits.setTenantLimits(req.principal.tenantId, req.body, req.principal.actor);
      return limitsView(req.principal.tenantId);
    },
  );

  app.get(
    '/api/v1/agents/:id/budget',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'getAgentBudget',
        tags: ['tenancy'],
        summary: 'An agent’s monthly budget and month-to-date spend',
        params: IdParams,
        response: { 200: AgentBudget, ...problems(401, 403, 404) },
      },
    },
    async (req) => limits.agentBudget(req.principal.tenantId, req.params.id),
  );

  app.put(
    '/api/v1/agents/:id/budget',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'setAgentBudget',
        tags: ['tenancy'],
        summary: 'Set an agent’s monthly budget in USD (null: none)',
        params: IdParams,
        body: Type.Object({ monthlyBudgetUsd: Nullable(Type.Number({ minimum: 0 })) }, { additionalProperties: false }),
        response: { 200: AgentBudget, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) => limits.setAgentBudget(req.principal.tenantId, req.params.id, req.body.monthlyBudgetUsd, req.principal.actor),
  );

  app.patch(
    '/api/v1/api-keys/:id',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'updateApiKey',
        tags: ['tenancy'],
        summary: 'Set an API key’s own request limit (null: the tenant’s); the caller must hold every permission of the key (403)',
        params: IdParams,
        body: Type.Object({ rateLimitPerMinute: Nullable(Type.Integer({ minimum: 1 })) }, { additionalProperties: false }),
        response: { 200: ApiKey, ...problems(400, 401, 403, 404) },
      },
    },
    async (req) =>
      tenancy.setKeyRateLimit(
        req.principal.tenantId,
        { keyId: req.params.id, limit: req.body.rateLimitPerMinute },
        req.principal.actor,
        req.principal,
      ),
  );

  app.get(
    '/api/v1/tenant',
    {
      // Describes only the caller: any credential may ask, an agent's own token included.
      config: { agentScope: 'own' },
      schema: {
        operationId: 'getTenant',
        tags: ['tenancy'],
        summary: 'The caller: its tenant and the permissions of the credential used',
        response: {
          200: Type.Object({
            tenant: Type.Object({ id: Type.String(), name: Type.String(), createdAt: Timestamp }),
            credential: Type.Object({ type: Type.String(), id: Nullable(Type.String()), permissions: Type.Array(Type.String()) }),
          }),
          ...problems(401),
        },
      },
    },
    async (req) => {
      const t = await tenancy.requireTenant(req.principal.tenantId);
      return {
        tenant: { id: t.id, name: t.name, createdAt: t.created_at },
        credential: { type: req.principal.actor.type, id: req.principal.actor.id, permissions: [...req.principal.permissions] },
      };
    },
  );

  app.get(
    '/api/v1/api-keys',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'listApiKeys',
        tags: ['tenancy'],
        summary: 'List API keys (never their secrets)',
        querystring: Type.Object({ ...PageQuery, includeRevoked: Type.Boolean({ default: false }) }, { additionalProperties: false }),
        response: {
          200: Type.Object({ apiKeys: Type.Array(ApiKey), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => {
      const { page, limit, includeRevoked } = req.query;
      const result = await tenancy.listKeys(req.principal.tenantId, limit, (page - 1) * limit, includeRevoked);
      return { ...result, page, limit };
    },
  );

  app.post(
    '/api/v1/api-keys',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'createApiKey',
        tags: ['tenancy'],
        summary: 'Create an API key; the key is in this response only',
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            permissions: Type.Array(PermissionSchema, { minItems: 1, maxItems: PERMISSIONS.length * 2 }),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ apiKey: ApiKey, key: Type.String({ description: 'shown once' }) }), ...problems(400, 401, 403) },
      },
    },
    async (req, reply) => {
      const permissions = parsePermissions(req.body.permissions);
      const { view, secret } = await tenancy.createKey(
        req.principal.tenantId,
        { name: req.body.name, permissions },
        req.principal.actor,
        req.principal,
      );
      // The secret is in this response alone: no cache (browser, proxy) may keep it.
      return reply.code(201).header('cache-control', 'no-store').send({ apiKey: view, key: secret });
    },
  );

  app.delete(
    '/api/v1/api-keys/:id',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'revokeApiKey',
        tags: ['tenancy'],
        summary:
          'Revoke an API key (it stops working at once). The caller must hold every permission of the key (403), and the tenant’s last active key holding every permission cannot be revoked (409 last_admin_key)',
        params: IdParams,
        response: { 204: Type.Null(), ...problems(401, 403, 404, 409) },
      },
    },
    async (req, reply) => {
      await tenancy.revokeKey(req.principal.tenantId, req.params.id, req.principal.actor, req.principal);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/v1/audit-events',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'listAuditEvents',
        tags: ['tenancy'],
        summary: 'Audit events of the tenant, newest first',
        querystring: Type.Object(
          {
            ...PageQuery,
            action: Type.Optional(Type.String({ maxLength: 64 })),
            resourceType: Type.Optional(Type.String({ maxLength: 64 })),
            resourceId: Type.Optional(Type.String({ maxLength: 64 })),
            actorId: Type.Optional(Type.String({ maxLength: 64 })),
            since: Type.Optional(Timestamp),
            until: Type.Optional(Timestamp),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            events: Type.Array(
              Type.Object({
                id: Type.String(),
                actorType: Type.String(),
                actorId: Nullable(Type.String()),
                action: Type.String(),
                resourceType: Type.String(),
                resourceId: Nullable(Type.String()),
                detail: Json,
                createdAt: Timestamp,
              }),
            ),
            total: Type.Integer(),
            page: Type.Integer(),
            limit: Type.Integer(),
          }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => {
      const { page, limit, ...filter } = req.query;
      // Timestamps are stored normalised to UTC with milliseconds; normalise the bounds the same way.
      const norm = (t?: string) => (t ? new Date(t).toISOString() : undefined);
      const result = await tenancy.auditEvents(
        req.principal.tenantId,
        { ...filter, since: norm(filter.since), until: norm(filter.until) },
        page,
        limit,
      );
      return { ...result, page, limit };
    },
  );
};
