import type { Db } from '../db/database.js';
import * as store from './store.js';
import * as usage from './usage/store.js';

/**
 * What `agentry export` reads of this domain (export/tenant.ts): its tables' rows of one tenant. Chunks are
 * left out (derived, indexed again on import); the usage rows travel (recorded spends, not derived).
 */
export const exportSources = (db: Db, tenantId: string) => [
  ...store.exportSources(db.kysely, tenantId),
  ...usage.exportSources(db.kysely, tenantId),
];
