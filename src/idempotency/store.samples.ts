import type { StoreSamples } from '../db/sql-samples.js';
import type * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';

export const samples = {
  claimKey: [
    {
      tenant_id: 'tenant-1',
      key: 'key-1',
      fingerprint: 'sha256-of-the-request',
      created_at: at,
      expires_at: '2026-01-02T00:00:00.000Z',
    },
  ],
  findKey: ['tenant-1', 'key-1'],
  recordOutcome: [
    { tenantId: 'tenant-1', key: 'key-1', createdAt: at },
    { run_id: 'run-1', task_id: null, message_id: 'message-1', response_status: 202 },
  ],
  deleteKey: {
    'any claim': ['tenant-1', 'key-1'],
    'this claim': ['tenant-1', 'key-1', at],
  },
  deleteExpired: [at],
} satisfies StoreSamples<typeof store>;
