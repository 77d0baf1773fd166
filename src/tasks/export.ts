import type { Db } from '../db/database.js';
import type { SealedValue } from '../identity/master-key-check.js';
import * as store from './store/export.js';

/** What `agentry export` reads of this domain (export/tenant.ts): its tables' rows of one tenant. */
export const exportSources = (db: Db, tenantId: string) => store.exportSources(db.kysely, tenantId);

/** This domain's sealed secret the master key check tries at start (identity/master-key-check.ts): the newest webhook secret. */
export async function sealedSamples(db: Db): Promise<SealedValue[]> {
  const row = await store.newestWebhookSecret(db.kysely);
  return row?.webhook_secret
    ? [{ what: `the webhook secret of task ${row.id}`, purpose: 'webhook-secrets', owner: row.id, sealed: row.webhook_secret }]
    : [];
}
