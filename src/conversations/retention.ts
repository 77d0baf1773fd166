import type { Db } from '../db/database.js';
import * as store from './store.js';

/**
 * What the retention sweep (retention/sweep.ts) asks of conversations and files: those older than a
 * tenant's setting deleted, in batches. The SQL stays in store.ts; app.ts hands this to the sweep.
 */
export function conversationRetention(db: Db) {
  return {
    deleteConversationsBefore: (tenantId: string, cutoff: string, limit: number) =>
      store.deleteConversationsBefore(db.kysely, tenantId, cutoff, limit),
    deleteFilesBefore: (tenantId: string, cutoff: string, limit: number) => store.deleteFilesBefore(db.kysely, tenantId, cutoff, limit),
  };
}
