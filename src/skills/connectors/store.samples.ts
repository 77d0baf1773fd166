import type { StoreSamples } from '../../db/sql-samples.js';
import type * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';

const connection: store.ConnectionRow = {
  id: 'connection-1',
  tenant_id: 'tenant-1',
  connector_id: 'github',
  configuration: 'v1.sealed',
  connected_by: null,
  created_at: at,
  updated_at: at,
};

const request: store.RequestRow = {
  id: 'request-1',
  tenant_id: 'tenant-1',
  agent_id: 'agent-1',
  connector_id: 'github',
  reason: 'to read issues',
  status: 'pending',
  task_id: 'task-1',
  requested_by: 'agent-1',
  decided_by: null,
  created_at: at,
  decided_at: null,
};

export const samples = {
  findConnection: ['tenant-1', 'github'],
  listConnections: ['tenant-1'],
  insertConnection: [connection],
  updateConnection: ['tenant-1', 'connection-1', { configuration: 'v1.sealed', updated_at: at }],
  deleteConnection: ['tenant-1', 'github'],
  insertRequest: [request],
  findRequest: ['tenant-1', 'request-1'],
  updateRequest: ['tenant-1', 'request-1', { status: 'accepted', decided_by: 'key-1', decided_at: at }],
  listRequests: {
    'no filter': ['tenant-1', {}, { limit: 50, offset: 0 }],
    'every filter': ['tenant-1', { status: 'pending', agentId: 'agent-1', connectorId: 'github' }, { limit: 50, offset: 0 }],
  },
  requestsOfAgent: ['tenant-1', 'agent-1'],
  newestConnection: [],
} satisfies StoreSamples<typeof store>;
