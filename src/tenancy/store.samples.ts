import { exportSample, type StoreSamples } from '../db/sql-samples.js';
import * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';

const auditEvent = {
  id: 'event-1',
  tenant_id: 'tenant-1',
  actor_type: 'api_key',
  actor_id: 'key-1',
  action: 'agent.created',
  resource_type: 'agent',
  resource_id: 'agent-1',
  detail: '{}',
  created_at: at,
};

export const samples = {
  insertTenant: [{ id: 'tenant-1', name: 'Acme', settings: '{}', created_at: at }],
  findTenant: ['tenant-1'],
  listTenants: [],
  findTenantSettingsForUpdate: { locked: ['tenant-1', true], unlocked: ['tenant-1', false] },
  updateTenantSettings: ['tenant-1', '{}'],
  insertApiKey: [
    {
      id: 'key-1',
      tenant_id: 'tenant-1',
      name: 'ci',
      secret_hash: 'sha256-hex',
      permissions: '["*"]',
      created_by: null,
      created_at: at,
      revoked_at: null,
      rate_limit_per_minute: null,
    },
  ],
  findApiKeyForAuth: ['key-1'],
  findApiKey: ['tenant-1', 'key-1'],
  listApiKeys: {
    'active only': ['tenant-1', { limit: 50, offset: 0, includeRevoked: false }],
    'revoked too': ['tenant-1', { limit: 50, offset: 0, includeRevoked: true }],
  },
  listActiveKeyPermissions: ['tenant-1'],
  revokeApiKey: ['tenant-1', 'key-1', at],
  setApiKeyRateLimit: ['tenant-1', 'key-1', 600],
  lockForAdmission: ({ db, dialect }) => store.lockForAdmission(db, 'tenant-1', dialect),
  insertAuditEvent: [auditEvent],
  insertAuditEvents: [[auditEvent, { ...auditEvent, id: 'event-2' }, { ...auditEvent, id: 'event-3' }]],
  listAuditEvents: {
    'no filter': ['tenant-1', {}, { limit: 50, offset: 0 }],
    'every filter': [
      'tenant-1',
      { action: 'agent.created', resourceType: 'agent', resourceId: 'agent-1', actorId: 'key-1', since: at, until: at },
      { limit: 50, offset: 0 },
    ],
  },
  deleteAuditEventsBefore: ['tenant-1', at, 100],
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
