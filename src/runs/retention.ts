import type { Kysely } from 'kysely';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import * as store from './store.js';

/** The approvals domain's part: a run's tool approvals (their arguments) go with it (approvals/service.ts). */
interface RunApprovals {
  deleteOfRuns(trx: Kysely<Database>, runIds: string[]): Promise<void>;
}

/**
 * What the retention sweep (retention/sweep.ts) asks of runs: ended runs deleted with their events,
 * suspensions and tool approvals (one transaction a batch),
 * and finished runs' events compacted to their terminal one. The SQL stays in store.ts; app.ts hands
 * this to the sweep, which declares the shape it needs (its `RunsRetention`).
 */
export function runRetention(db: Db, approvals: RunApprovals) {
  return {
    deleteEndedBefore: (tenantId: string, cutoff: string, limit: number) =>
      store.deleteEndedRunsBefore(db.kysely, { tenantId, cutoff, limit }, (trx, runIds) => approvals.deleteOfRuns(trx, runIds)),
    compactEventsBefore: (tenantId: string, cutoff: string, at: string, limit: number) =>
      store.compactRunEvents(db.kysely, { tenantId, cutoff, limit }, at),
  };
}
