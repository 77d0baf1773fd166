import { exportSample, type StoreSamples } from '../../db/sql-samples.js';
import * as store from './store.js';

const scope = { tenantId: 'tenant-1', from: '2026-01-01T00:00:00.000Z', to: '2026-02-01T00:00:00.000Z' };

export const samples = {
  insertUsage: [
    {
      id: 'usage-1',
      tenant_id: 'tenant-1',
      knowledge_base_id: 'base-1',
      document_id: 'doc-1',
      run_id: null,
      kind: 'ingestion',
      model: 'openai/text-embedding-3-small',
      input_tokens: 120,
      output_tokens: 0,
      created_at: '2026-01-01T00:00:00.000Z',
    },
  ],
  dailyKnowledgeUsage: { 'every run': [scope], 'one run': [{ ...scope, runId: 'run-1' }] },
  deleteUsageBefore: ['tenant-1', '2026-01-01T00:00:00.000Z', 500],
  exportSources: exportSample(store.exportSources),
} satisfies StoreSamples<typeof store>;
