import type { Db } from '../db/database.js';
import * as store from './store.js';

/**
 * What the retention sweep (retention/sweep.ts) asks of runs: ended runs deleted with their events,
 * and finished runs' events compacted to their terminal one. The SQL stays in store.ts; app.ts hands
 * this to the sweep, which declares the shape it needs (its `RunsRetention`).
 */
export function runRetention(db: Db) {
  return {
    deleteEndedBefore: (tenantId: string, cutoff: string, limit: number) => store.deleteEndedRunsBefore(db.kysely, tenantId, cutoff, limit),
    compactEventsBefore: (tenantId: string, cutoff: string, at: string, limit: number) =>
      store.compactRunEvents(db.kysely, tenantId, cutoff, at, limit),
  };
}
