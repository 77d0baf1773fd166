import type { StoreSamples } from '../../db/sql-samples.js';
import type * as store from './store.js';

export const samples = {
  dailyUsage: ['tenant-1', '2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z'],
} satisfies StoreSamples<typeof store>;
