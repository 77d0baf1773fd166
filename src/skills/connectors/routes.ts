import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Id, Literals, Nullable, PageQuery, problems, Timestamp } from '../../http/schemas.js';
import { REQUEST_STATUSES, type ConnectorsService } from './service.js';

const tags = ['connectors'];
const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'connector id, e.g. github' }) });

const Connector = Type.Object({
  id: Type.String(),
  name: Type.String(),
  category: Type.String(),
  description: Type.String(),
  fields: Type.Array(
    Type.Object({
      name: Type.String(),
      label: Type.String(),
      type: Type.String({ description: 'string, secret, url, email or boolean' }),
      required: Type.Boolean(),
      secret: Type.Boolean({ description: 'stored, never shown: answered as ********' }),
      description: Type.String(),
    }),
  ),
  suggestedSkills: Type.Array(Type.String({ description: 'store skill names' })),
  connected: Type.Boolean(),
  connection: Nullable(
    Type.Object({
      id: Type.String(),
      configuration: Type.Record(Type.String(), Type.Unknown(), { description: 'secret values masked' }),
      connectedBy: Nullable(Type.String()),
      connectedAt: Timestamp,
      updatedAt: Timestamp,
    }),
  ),
});

const ConfigurationBody = Type.Object(
  { configuration: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 32 }) },
  { additionalProperties: false },
);

const ConnectorRequest = Type.Object({
  id: Type.String(),
  agentId: Type.String(),
  connectorId: Type.String(),
  reason: Type.String(),
  status: Literals(REQUEST_STATUSES),
  taskId: Nullable(Type.String()),
  requestedBy: Nullable(Type.String()),
  decidedBy: Nullable(Type.String()),
  createdAt: Timestamp,
  decidedAt: Nullable(Timestamp),
});

/** /api/v1/connectors: the integration catalog, the tenant's connections, and agents' requests. */
export const connectorsRoutes: FastifyPluginAsyncTypebox<{ connectors: ConnectorsService }> = async (app, { connectors }) => {
  app.get(
    '/api/v1/connectors',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'listConnectors',
        tags,
        summary: 'The integration catalog with this tenant’s connections (secrets masked)',
        querystring: Type.Object(
          { category: Type.Optional(Type.String({ maxLength: 64 })), connected: Type.Optional(Type.Boolean()) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ connectors: Type.Array(Connector), total: Type.Integer() }), ...problems(400, 401, 403) },
      },
    },
    async (req) => connectors.list(req.principal.tenantId, req.query),
  );

  app.get(
    '/api/v1/connectors/requests',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'listConnectorRequests',
        tags,
        summary: 'Connector requests agents made (connector_request), newest first',
        querystring: Type.Object(
          {
            status: Type.Optional(Literals(REQUEST_STATUSES)),
            agentId: Type.Optional(Id),
            connectorId: Type.Optional(Type.String({ maxLength: 64 })),
            ...PageQuery,
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ requests: Type.Array(ConnectorRequest), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (req) => {
      const { page, limit, ...filter } = req.query;
      return connectors.listRequests(req.principal.tenantId, filter, page, limit);
    },
  );

  app.get(
    '/api/v1/connectors/:id',
    {
      config: { permission: 'settings:read' },
      schema: {
        operationId: 'getConnector',
        tags,
        summary: 'One connector with this tenant’s connection (secrets masked)',
        params: Params,
        response: { 200: Connector, ...problems(401, 403, 404) },
      },
    },
    async (req) => connectors.get(req.principal.tenantId, req.params.id),
  );

  app.post(
    '/api/v1/connectors/:id/connect',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'connectConnector',
        tags,
        summary: 'Connect an integration with its configuration (validated per connector; 409 already_connected)',
        params: Params,
        body: ConfigurationBody,
        response: { 201: Connector, ...problems(400, 401, 403, 404, 409, 413, 415) },
      },
    },
    async (req, reply) => reply.code(201).send(await connectors.connect(req.principal, req.params.id, req.body.configuration)),
  );

  app.patch(
    '/api/v1/connectors/:id/connection',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'updateConnection',
        tags,
        summary: 'Change some fields of a connection (others keep their value; null removes an optional one)',
        params: Params,
        body: ConfigurationBody,
        response: { 200: Connector, ...problems(400, 401, 403, 404, 413, 415) },
      },
    },
    async (req) => connectors.updateConnection(req.principal, req.params.id, req.body.configuration),
  );

  app.post(
    '/api/v1/connectors/:id/disconnect',
    {
      config: { permission: 'settings:write' },
      schema: {
        operationId: 'disconnectConnector',
        tags,
        summary: 'Disconnect an integration (its configuration is deleted)',
        params: Params,
        response: { 204: Type.Null(), ...problems(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await connectors.disconnect(req.principal, req.params.id);
      return reply.code(204).send(null);
    },
  );
};
