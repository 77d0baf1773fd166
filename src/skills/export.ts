import type { Db } from '../db/database.js';
import type { SealedValue } from '../identity/master-key-check.js';
import * as connectors from './connectors/store.js';
import * as store from './store.js';

/** What `agentry export` reads of this domain (export/tenant.ts): its tables' rows of one tenant. */
export const exportSources = (db: Db, tenantId: string) => store.exportSources(db.kysely, tenantId);

/** This domain's sealed secret the master key check tries at start (identity/master-key-check.ts): the newest connector configuration. */
export async function sealedSamples(db: Db): Promise<SealedValue[]> {
  const row = await connectors.newestConnection(db.kysely);
  if (!row) return [];
  const owner = `${row.tenant_id}/${row.connector_id}`;
  return [{ what: `the configuration of connector ${owner}`, purpose: 'connector-configurations', owner, sealed: row.configuration }];
}
