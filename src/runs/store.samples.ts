import type { Insertable } from 'kysely';
import { DeferredInserts } from '../db/group-commit.js';
import type { RunTable } from '../db/schema.js';
import { exportSample, type StoreSamples } from '../db/sql-samples.js';
import * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';

/** A run as its start writes it (runs/start-rows.ts). */
const run: Insertable<RunTable> = {
  id: 'run-1',
  tenant_id: 'tenant-1',
  agent_id: 'agent-1',
  conversation_id: 'conversation-1',
  task_id: null,
  kind: 'execute',
  status: 'running',
  model: 'builtin/echo',
  input: 'hello',
  options: '{}',
  output: '',
  error: null,
  cost: 0,
  reserved_usd: 0.01,
  input_tokens: 0,
  output_tokens: 0,
  duration_ms: null,
  tool_calls: '[]',
  steps: '[]',
  warnings: '[]',
  cancel_requested: 0,
  lease_owner: 'process-1',
  lease_expires_at: at,
  created_at: at,
  started_at: at,
  completed_at: null,
};

const event = (seq: number) => ({ run_id: 'run-1', seq, event: 'token', data: '{}' });

const page = { tenantId: 'tenant-1', limit: 50, offset: 0 };

export const samples = {
  findRun: ['tenant-1', 'run-1'],
  findRunById: ['run-1'],
  listAgentRuns: [{ ...page, agentId: 'agent-1' }],
  listTenantRuns: {
    'no filter': [page],
    'every filter': [{ ...page, status: 'completed', kind: 'execute', agentId: 'agent-1', since: at }],
  },
  listTaskRuns: {
    'any status': [{ ...page, taskId: 'task-1' }],
    'one status': [{ ...page, taskId: 'task-1', status: 'failed' }],
  },
  deferRun: async ({ db }) => {
    const later = new DeferredInserts();
    store.deferRun(later, run);
    await later.flush(db);
  },
  deferEvents: async ({ db }) => {
    const later = new DeferredInserts();
    store.deferEvents(later, [event(1), event(2), event(3)]);
    await later.flush(db);
  },
  finishRun: {
    // runs/finish.ts: a run's end.
    completed: [
      'run-1',
      {
        status: 'completed',
        output: 'hi',
        error: null,
        cost: 0.001,
        input_tokens: 10,
        output_tokens: 2,
        duration_ms: 120,
        tool_calls: '[]',
        steps: '[]',
        structured_output: null,
        warnings: '[]',
        finish_reason: 'stop',
        context_truncated: 0,
        completed_at: at,
        lease_owner: null,
        lease_expires_at: null,
      },
    ],
    // runs/control.ts: cancelled where it runs.
    cancelled: ['run-1', { status: 'cancelled', error: '{}', completed_at: at, lease_owner: null, lease_expires_at: null }],
  },
  requestCancel: ['run-1'],
  cancelRequested: [['run-1', 'run-2']],
  isRunActive: ['run-1'],
  renewLeases: ['process-1', ['run-1', 'run-2'], at],
  expiredRunsQuery: [at, 100],
  expiredRuns: [at, 100],
  spendAndReservedSince: {
    tenant: [{ tenantId: 'tenant-1', since: at }],
    agent: [{ tenantId: 'tenant-1', since: at, agentId: 'agent-1' }],
  },
  runningRuns: {
    tenant: [{ tenantId: 'tenant-1' }],
    agent: [{ tenantId: 'tenant-1', agentId: 'agent-1' }],
  },
  insertEvents: [[event(1), event(2), event(3)]],
  eventsAfter: ['run-1', 0],
  lastEvent: ['run-1'],
  pauseRun: ['run-1', { output: 'so far', input_tokens: 10, output_tokens: 2, tool_calls: '[]', steps: '[]', warnings: '[]' }],
  claimPausedRun: ['run-1', 'process-1', at],
  endPausedRun: [
    'run-1',
    { status: 'cancelled', error: '{}', completed_at: at, duration_ms: 10, lease_owner: null, lease_expires_at: null },
  ],
  insertSuspension: [{ run_id: 'run-1', tenant_id: 'tenant-1', state: '{}', created_at: at }],
  findSuspension: ['run-1'],
  deleteSuspension: ['run-1'],
  deleteEndedRunsBefore: [{ tenantId: 'tenant-1', cutoff: at, limit: 100 }, async () => {}],
  compactRunEvents: [{ tenantId: 'tenant-1', cutoff: at, limit: 100 }, at],
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
