import { exportSample, type StoreSamples } from '../db/sql-samples.js';
import * as store from './store.js';

const approval: store.ToolApprovalRow = {
  id: 'approval-1',
  tenant_id: 'tenant-1',
  agent_id: 'agent-1',
  run_id: 'run-1',
  conversation_id: 'conversation-1',
  tool_call_id: 'call-1',
  tool_name: 'refund',
  arguments: '{}',
  reason: 'needs a person',
  status: 'pending',
  on_timeout: 'reject',
  decided_arguments: null,
  decision_reason: null,
  decided_by_type: null,
  decided_by_id: null,
  decided_at: null,
  resumed_at: null,
  expires_at: '2026-01-02T00:00:00.000Z',
  created_at: '2026-01-01T00:00:00.000Z',
};

const at = '2026-01-01T00:00:00.000Z';

export const samples = {
  insertApprovals: [[approval, { ...approval, id: 'approval-2', tool_call_id: 'call-2' }]],
  findApproval: ['tenant-1', 'approval-1'],
  listApprovals: {
    'no filter': [{ tenantId: 'tenant-1', filter: {}, limit: 50, offset: 0 }],
    'every filter': [{ tenantId: 'tenant-1', filter: { status: 'pending', agentId: 'agent-1' }, limit: 50, offset: 0 }],
  },
  decide: {
    'by a person': [
      'approval-1',
      { unexpiredAt: at },
      {
        status: 'approved',
        decided_arguments: null,
        decision_reason: null,
        decided_by_type: 'api_key',
        decided_by_id: 'key-1',
        decided_at: at,
      },
    ],
    'on timeout': [
      'approval-1',
      {},
      { status: 'expired', decision_reason: 'expired', decided_by_type: 'system', decided_by_id: null, decided_at: at },
    ],
  },
  untakenOfRun: ['run-1'],
  markTaken: [['approval-1', 'approval-2'], at],
  countPending: [],
  expired: [at, 100],
  decidedRuns: [100],
  cancelOfRun: ['run-1', at],
  closeUntaken: ['run-1', at],
  deleteOfRuns: [['run-1', 'run-2']],
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
