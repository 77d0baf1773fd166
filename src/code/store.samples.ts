import type { StoreSamples } from '../db/sql-samples.js';
import type * as store from './store.js';

const at = '2026-01-01T00:00:00.000Z';

export const samples = {
  takeSlot: [{ tenantId: 'tenant-1', slot: 0, holder: 'execution-1', now: at, expiresAt: '2026-01-01T00:03:00.000Z' }],
  heldSlots: ['tenant-1', 2, at],
  releaseSlot: ['tenant-1', 0, 'execution-1'],
} satisfies StoreSamples<typeof store>;
