import type { Db } from '../db/database.js';
import { now } from '../ids.js';
import { findMasterKey, type MasterKeySource } from './master-key.js';
import { SecretBox } from './secret-box.js';
import * as store from './store.js';

/**
 * At start, before anything uses the master key: does it open the secrets this database holds? A
 * database restored without its `master.key` (or started with another `MASTER_KEY`) used to start
 * and silently make a new key, after which signing answered 500 and webhooks 401. Now the server
 * refuses to start and says what to restore. `MASTER_KEY_RESET=true` starts anyway on purpose (the key
 * was lost for good): platform signing keys that no longer open are revoked, so a new one is made on
 * first use; the other secrets stay unreadable until set again (docs/operations.md, "Backup and restore").
 *
 * One value of each kind is tried (the newest): every value of a database is sealed under the same key.
 */

/** A sealed value of some domain, with what it takes to open it (identity/secret-box.ts). */
export interface SealedValue {
  /** For the message: what it is ("the webhook secret of task ..."). */
  what: string;
  purpose: string;
  owner: string;
  sealed: string;
}

export class MasterKeyMismatch extends Error {}

export interface MasterKeyCheckSource extends MasterKeySource {
  masterKeyReset: boolean;
}

/** The identity domain's own sealed values: the newest platform and agent private keys. */
async function identitySamples(db: Db): Promise<SealedValue[]> {
  const { platform, agent } = await store.newestSealedKeys(db.kysely);
  const samples: SealedValue[] = [];
  if (platform)
    samples.push({
      what: `the platform signing key ${platform.kid}`,
      purpose: 'private-keys',
      owner: `platform-key:${platform.kid}`,
      sealed: platform.sealed,
    });
  if (agent)
    samples.push({ what: `the agent key ${agent.kid}`, purpose: 'private-keys', owner: `agent-key:${agent.kid}`, sealed: agent.sealed });
  return samples;
}

/**
 * Throws MasterKeyMismatch (with what to restore) when the database holds sealed values and the
 * master key is missing or opens none of them; with `masterKeyReset` it re-keys instead and returns
 * what stays unreadable. `others`: the sealed values other domains hold (tasks, skills).
 */
export async function checkMasterKey(db: Db, config: MasterKeyCheckSource, others: SealedValue[]): Promise<{ reset: string[] }> {
  const samples = [...(await identitySamples(db)), ...others];
  if (!samples.length) return { reset: [] };
  const found = findMasterKey(config);
  const where = config.masterKey ? 'MASTER_KEY' : `${config.dataDir}/master.key`;
  const unreadable = found ? samples.filter((s) => new SecretBox(found.key, s.purpose).open(s.sealed, s.owner) === null) : samples;
  if (!unreadable.length) return { reset: [] };
  const what = unreadable.map((s) => s.what).join(', ');
  if (!config.masterKeyReset) {
    const problem = found
      ? `${where} does not open the secrets this database holds (${what}): it is not the key they were sealed with`
      : `this database holds sealed secrets (${what}) but there is no master key: neither MASTER_KEY nor ${where} is set`;
    throw new MasterKeyMismatch(
      `${problem}. Restore the master.key file (into DATA_DIR) or the MASTER_KEY value that was backed up with this database. ` +
        'If that key is lost for good, MASTER_KEY_RESET=true starts with a new key: the platform signing keys are replaced ' +
        '(tokens they signed stop verifying) and agent keys, webhook secrets and connector and tool credentials must be set again.',
    );
  }
  await revokeUnreadablePlatformKeys(db, found?.key ?? null);
  return { reset: unreadable.map((s) => s.what) };
}

/** MASTER_KEY_RESET: platform keys this key cannot open are revoked, so a new one signs. */
async function revokeUnreadablePlatformKeys(db: Db, key: Buffer | null) {
  const rows = await store.listPlatformKeys(db.kysely);
  const box = key ? new SecretBox(key, 'private-keys') : null;
  const kids = rows.filter((r) => r.revoked_at === null && box?.open(r.private_jwk, `platform-key:${r.kid}`) == null).map((r) => r.kid);
  if (kids.length) await store.revokePlatformKeys(db.kysely, kids, now());
}
