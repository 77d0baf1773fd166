import type { Db } from '../db/database.js';
import * as store from './store.js';

/** What `agentry export` reads of this domain (export/tenant.ts): its tables' rows of one tenant. */
export const exportSources = (db: Db, tenantId: string) => store.exportSources(db.kysely, tenantId);
