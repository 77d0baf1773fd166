import { exportSample, type StoreSamples } from '../db/sql-samples.js';
import * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';

const skill: store.SkillRow = {
  id: 'skill-1',
  tenant_id: 'tenant-1',
  name: 'code-review',
  description: 'Reviews a change',
  category: 'engineering',
  source: 'custom',
  store_id: null,
  status: 'active',
  instructions: 'Read the diff.',
  metadata: '{}',
  front_matter: '{}',
  created_by: null,
  created_at: at,
  updated_at: at,
};

const assignment: store.AssignmentRow = {
  skill_id: 'skill-1',
  agent_id: 'agent-1',
  tenant_id: 'tenant-1',
  enabled: 1,
  priority: 0,
  config: '{}',
  assigned_by: null,
  created_at: at,
  updated_at: at,
};

const file = { name: 'checklist.md', content: '- tests', language: null, size: 7 };

export const samples = {
  listSkills: {
    'no filter': [{ tenantId: 'tenant-1', filter: {}, limit: 50, offset: 0 }],
    'every filter': [
      { tenantId: 'tenant-1', filter: { category: 'engineering', status: 'active', source: 'custom', q: 'review' }, limit: 50, offset: 0 },
    ],
  },
  listCategories: ['tenant-1'],
  findSkill: ['tenant-1', 'skill-1'],
  findSkillByName: ['tenant-1', 'code-review'],
  findSkillByStoreId: ['tenant-1', 'code-review'],
  acquiredStoreSkills: ['tenant-1'],
  insertSkill: [skill],
  updateSkill: [
    'tenant-1',
    'skill-1',
    { updated_at: at, name: 'review', description: 'd', category: null, instructions: 'i', metadata: '{}', status: 'archived' },
  ],
  fileBriefs: ['tenant-1', ['skill-1', 'skill-2']],
  skillFiles: { 'every kind': ['tenant-1', 'skill-1'], 'one kind': ['tenant-1', 'skill-1', 'reference'] },
  replaceFiles: [{ tenantId: 'tenant-1', skillId: 'skill-1', kind: 'reference' }, [file, { ...file, name: 'style.md' }]],
  findAssignment: ['tenant-1', 'skill-1', 'agent-1'],
  insertAssignment: [assignment],
  updateAssignment: [
    { tenantId: 'tenant-1', skillId: 'skill-1', agentId: 'agent-1' },
    { updated_at: at, enabled: 0, priority: 5, config: '{}' },
  ],
  deleteAssignment: ['tenant-1', 'skill-1', 'agent-1'],
  deleteAgentAssignments: ['tenant-1', 'agent-1'],
  skillAssignments: ['tenant-1', 'skill-1'],
  agentAssignments: { every: ['tenant-1', 'agent-1'], 'usable only': ['tenant-1', 'agent-1', { usableOnly: true }] },
  copyAssignments: ['tenant-1', { fromAgentId: 'agent-1', toAgentId: 'agent-2', at }],
  isUniqueViolation: null,
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
