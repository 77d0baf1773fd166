import { exportSample, type StoreSamples } from '../db/sql-samples.js';
import * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';
const agentWide: store.BlockScope = { tenantId: 'tenant-1', agentId: 'agent-1', userId: null };
const ofUser: store.BlockScope = { tenantId: 'tenant-1', agentId: 'agent-1', userId: 'user-1' };

const block: store.MemoryBlockRow = {
  id: 'block-1',
  tenant_id: 'tenant-1',
  agent_id: 'agent-1',
  user_id: null,
  label: 'preferences',
  value: 'likes tea',
  version: 1,
  created_at: at,
  updated_at: at,
  updated_by_type: 'agent',
  updated_by_id: 'agent-1',
};

const version: store.MemoryVersionRow = {
  id: 'version-1',
  tenant_id: 'tenant-1',
  agent_id: 'agent-1',
  user_id: null,
  label: 'preferences',
  version: 1,
  change: 'create',
  value: 'likes tea',
  previous_value: null,
  actor_type: 'agent',
  actor_id: 'agent-1',
  run_id: 'run-1',
  created_at: at,
};

export const samples = {
  listBlocks: { 'agent-wide': [agentWide], "a user's": [ofUser] },
  blocksForRun: { 'without a user': ['tenant-1', 'agent-1', null], 'with a user': ['tenant-1', 'agent-1', 'user-1'] },
  findBlock: { 'agent-wide': [agentWide, 'preferences'], "a user's": [ofUser, 'preferences'] },
  lockScopeForCreate: ({ db, dialect }) => store.lockScopeForCreate(db, ofUser, dialect),
  countBlocks: [ofUser],
  insertBlock: [block],
  updateBlock: [
    { tenantId: 'tenant-1', id: 'block-1', version: 1 },
    { value: 'likes coffee', version: 2, updated_at: at, updated_by_type: 'agent', updated_by_id: 'agent-1' },
  ],
  deleteBlock: [{ tenantId: 'tenant-1', id: 'block-1', version: 2 }],
  lastVersion: [ofUser, 'preferences'],
  insertVersion: [version],
  listVersions: [ofUser, 'preferences', { limit: 50, offset: 0 }],
  deleteAgentMemory: ['tenant-1', 'agent-1'],
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
