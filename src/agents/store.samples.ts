import { exportSample, type StoreSamples } from '../db/sql-samples.js';
import * as store from './store.js';

const agent: store.AgentRow = {
  id: 'agent-1',
  tenant_id: 'tenant-1',
  app_id: 'app-1',
  team_id: null,
  name: 'Support',
  role: null,
  description: null,
  model: 'builtin/echo',
  system_prompt: null,
  context_prompt: null,
  status: 'active',
  hosting: 'platform',
  tools: '[]',
  configuration: '{}',
  monthly_budget_usd: null,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
};

export const samples = {
  listAgents: {
    'no filter': [{ tenantId: 'tenant-1', filter: {}, limit: 50, offset: 0 }],
    'every filter': [
      { tenantId: 'tenant-1', filter: { appId: 'app-1', teamId: 'team-1', status: 'active', q: 'sup' }, limit: 50, offset: 0 },
    ],
  },
  findAgent: ['tenant-1', 'agent-1'],
  findAgentIdentityAnyTenant: ['agent-1'],
  findAgentBudget: ['tenant-1', 'agent-1'],
  setAgentBudget: ['tenant-1', 'agent-1', 10],
  existingAgentIds: ['tenant-1', ['agent-1', 'agent-2']],
  insertAgent: [agent],
  updateAgent: ['tenant-1', 'agent-1', { name: 'Support', updated_at: '2026-01-01T00:00:00.000Z' }],
  transitionAgent: ['tenant-1', 'agent-1', { from: 'active', to: 'paused', at: '2026-01-01T00:00:00.000Z' }],
  deleteAgent: ['tenant-1', 'agent-1'],
  listApps: ['tenant-1'],
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
