import { importJWK, type CryptoKey } from 'jose';
import { TtlCache } from '../cache.js';
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import { Conflict } from '../errors.js';
import { privateJwkColumn, publicJwkColumn } from './columns.js';
import { open, seal } from './encryption.js';
import * as store from './store.js';
import {
  iso,
  MAX_TOKEN_LIFETIME_S,
  SKEW_S,
  DEFAULT_PLATFORM_ACTIVATION_DELAY_S,
  PLATFORM_KEY_CACHE_MS,
  generateEs256Key,
  maxGeneration,
} from './key-material.js';

/** The platform's signing keys (tokens, SVIDs, badges): generations, activation, retirement, revocation. */

type PlatformKeyStatus = 'pending' | 'active' | 'retired' | 'expired' | 'revoked';

export interface PlatformKeyView {
  kid: string;
  generation: number;
  status: PlatformKeyStatus;
  createdAt: string;
  activatesAt: string;
  retiresAt: string | null;
  /** End of publication (retirement + the longest token lifetime + skew). */
  expiresAt: string | null;
  revokedAt: string | null;
}

const publicationEnd = (retiresAt: string | null) =>
  retiresAt === null ? null : Date.parse(retiresAt) + (MAX_TOKEN_LIFETIME_S + SKEW_S) * 1000;

/**
 * Status of a platform key, derived from its timestamps: published from creation (pending until
 * `activates_at`), signing until `retires_at`, published until the longest token lifetime after that.
 */
function platformKeyStatus(row: store.PlatformKeyRow, now: number): PlatformKeyStatus {
  if (row.revoked_at) return 'revoked';
  const end = publicationEnd(row.retires_at);
  if (end !== null && end <= now) return 'expired';
  if (Date.parse(row.activates_at) > now) return 'pending';
  if (row.retires_at !== null && Date.parse(row.retires_at) <= now) return 'retired';
  return 'active';
}

const isPublished = (s: PlatformKeyStatus) => s === 'pending' || s === 'active' || s === 'retired';

/** The cache's one entry: every key row, as one read answers them. */
const ALL_KEYS = 'all';

/**
 * The platform's ES256 keys: they sign SVIDs, badges and access tokens. Verification keys are kept
 * in memory (refreshed every few seconds, at once on an unknown kid, and at once after a change made
 * by this process), so checking a token costs no database round trip for its key.
 */
export class PlatformKeyring {
  private readonly cache: TtlCache<store.PlatformKeyRow[]>;
  private loading: Promise<store.PlatformKeyRow[]> | null = null;
  private lastMissReload = 0;
  private readonly verifyKeys = new Map<string, Promise<CryptoKey>>();
  private readonly signKeys = new Map<string, Promise<CryptoKey>>();

  constructor(
    private readonly db: Db,
    private readonly masterKey: Buffer,
    private readonly clock: Clock,
  ) {
    this.cache = new TtlCache({ ttlMs: PLATFORM_KEY_CACHE_MS, max: 1, clock });
  }

  private aad = (kid: string) => `platform-key:${kid}`;

  /** Every key row, read now (one read at a time: concurrent callers share it) and cached. */
  private async load(): Promise<store.PlatformKeyRow[]> {
    this.loading ??= store
      .listPlatformKeys(this.db.kysely)
      .then((rows) => {
        this.cache.set(ALL_KEYS, rows);
        return rows;
      })
      .finally(() => (this.loading = null));
    return this.loading;
  }

  private async rows(): Promise<store.PlatformKeyRow[]> {
    return this.cache.get(ALL_KEYS) ?? (await this.load());
  }

  invalidate() {
    this.cache.clear();
  }

  /**
   * The published keys and the bundle sequence, fresh from the database (one read), so public
   * documents show changes at once. The sequence changes exactly when the published content changes
   * and never goes down: each key adds 1 when it is published and 1 more when it leaves (revoked or
   * expired); key rows are never deleted.
   */
  async snapshot(): Promise<{ published: store.PlatformKeyRow[]; sequence: number }> {
    await this.ensureSigningKey();
    const now = this.clock.now();
    const rows = await this.load();
    const statuses = rows.map((row) => ({ row, status: platformKeyStatus(row, now) }));
    return {
      published: statuses.filter((k) => isPublished(k.status)).map((k) => k.row),
      sequence: statuses.reduce((n, k) => n + 1 + (isPublished(k.status) ? 0 : 1), 0),
    };
  }

  async list(): Promise<PlatformKeyView[]> {
    const now = this.clock.now();
    return (await this.load()).map((row) => ({
      kid: row.kid,
      generation: row.generation,
      status: platformKeyStatus(row, now),
      createdAt: row.created_at,
      activatesAt: row.activates_at,
      retiresAt: row.retires_at,
      expiresAt: row.retires_at === null ? null : iso(publicationEnd(row.retires_at)!),
      revokedAt: row.revoked_at,
    }));
  }

  /**
   * For `agentry doctor`: the keys, and for each one that signs now or will (active, pending) whether
   * its sealed private key opens with this master key and imports as an ES256 key. Reads only.
   */
  async check(): Promise<{ keys: PlatformKeyView[]; unusable: { kid: string; reason: string }[] }> {
    const rows = await this.load();
    const keys = await this.list();
    const unusable: { kid: string; reason: string }[] = [];
    for (const view of keys) {
      if (view.status !== 'active' && view.status !== 'pending') continue;
      const row = rows.find((r) => r.kid === view.kid)!;
      try {
        const jwk = privateJwkColumn(open(this.masterKey, row.private_jwk, this.aad(row.kid)), 'identity_platform_keys.private_jwk');
        await importJWK(jwk, 'ES256');
      } catch (err) {
        unusable.push({ kid: view.kid, reason: (err as Error).message });
      }
    }
    return { keys, unusable };
  }

  /** The public key for a kid, if that key is published (pending, active or retired). */
  async verificationKey(kid: string): Promise<CryptoKey | null> {
    let rows = await this.rows();
    let row = rows.find((r) => r.kid === kid);
    // Real time, not the clock: this bounds the database reads that unknown kids cause.
    if (!row && Date.now() - this.lastMissReload > 1000) {
      // Possibly a key created by another process since the last load.
      this.lastMissReload = Date.now();
      rows = await this.load();
      row = rows.find((r) => r.kid === kid);
    }
    if (!row || !isPublished(platformKeyStatus(row, this.clock.now()))) return null;
    let key = this.verifyKeys.get(kid);
    if (!key) {
      key = importJWK(publicJwkColumn(row.public_jwk, 'identity_platform_keys.public_jwk'), 'ES256') as Promise<CryptoKey>;
      this.verifyKeys.set(kid, key);
    }
    return key;
  }

  private signingRow(rows: store.PlatformKeyRow[]): store.PlatformKeyRow | undefined {
    const now = this.clock.now();
    return rows.filter((r) => platformKeyStatus(r, now) === 'active').sort((a, b) => b.generation - a.generation)[0];
  }

  /** The key that signs now (created on first use, race-free across processes). */
  async signingKey(): Promise<{ kid: string; key: CryptoKey }> {
    let row = this.signingRow(await this.rows());
    if (!row) {
      await this.ensureSigningKey();
      row = this.signingRow(await this.load());
      if (!row) throw new Error('no platform signing key is available');
    }
    const kid = row.kid;
    let key = this.signKeys.get(kid);
    if (!key) {
      const jwk = privateJwkColumn(open(this.masterKey, row.private_jwk, this.aad(kid)), 'identity_platform_keys.private_jwk');
      key = importJWK(jwk, 'ES256') as Promise<CryptoKey>;
      key.catch(() => this.signKeys.delete(kid));
      this.signKeys.set(kid, key);
    }
    return { kid, key: await key };
  }

  /** Makes sure some key signs now: on a fresh database (or after the signer was revoked) one is made. */
  private async ensureSigningKey(): Promise<void> {
    if (this.signingRow(await this.rows())) return;
    for (let attempt = 0; attempt < 5; attempt++) {
      // One read gives both facts, so "nobody signs" and "the next generation" agree: a process that
      // lost the race finds the winner's generation taken, reads again and sees the winner's key.
      const rows = await this.load();
      if (this.signingRow(rows)) return;
      const inserted = await this.insertGeneration(maxGeneration(rows) + 1, 0);
      this.invalidate();
      if (inserted) return;
    }
    throw new Error('could not create a platform signing key');
  }

  private async insertGeneration(generation: number, activationDelayS: number): Promise<store.PlatformKeyRow | null> {
    const generated = await generateEs256Key();
    const now = this.clock.now();
    const row: store.PlatformKeyRow = {
      kid: generated.kid,
      generation,
      public_jwk: JSON.stringify(generated.publicJwk),
      private_jwk: seal(this.masterKey, JSON.stringify(generated.privateJwk), this.aad(generated.kid)),
      created_at: iso(now),
      activates_at: iso(now + activationDelayS * 1000),
      retires_at: null,
      revoked_at: null,
    };
    const inserted = await this.db.kysely.transaction().execute(async (trx) => {
      if (!(await store.insertPlatformKeyIfAbsent(trx, row))) return false;
      await store.retirePlatformKeys(trx, generation, row.activates_at);
      return true;
    });
    return inserted ? row : null;
  }

  /**
   * Rotation: the new key is published at once and signs only after `activationDelayS` (publish
   * before sign); the keys it replaces stop signing then and stay published for the longest token
   * lifetime after that.
   */
  async rotate(activationDelayS = DEFAULT_PLATFORM_ACTIVATION_DELAY_S): Promise<PlatformKeyView> {
    await this.ensureSigningKey();
    for (let attempt = 0; attempt < 5; attempt++) {
      const key = await this.insertGeneration(maxGeneration(await this.load()) + 1, activationDelayS);
      this.invalidate();
      if (key) return (await this.list()).find((k) => k.kid === key.kid)!;
    }
    throw new Conflict('key_rotation_conflict', 'another process is rotating the platform key; retry');
  }

  /** Revokes a platform key: it leaves the JWKS and trust bundle, and its tokens stop verifying. */
  async revoke(kid: string): Promise<boolean> {
    const now = this.clock.now();
    const row = (await this.load()).find((r) => r.kid === kid);
    if (!row) return false;
    await this.db.kysely.transaction().execute(async (trx) => {
      await store.revokePlatformKey(trx, kid, iso(now));
      // A successor revoked before it took over: the keys it would have retired keep signing.
      if (Date.parse(row.activates_at) > now) await store.unretirePlatformKeys(trx, row.activates_at, iso(now));
    });
    this.invalidate();
    this.verifyKeys.delete(kid);
    this.signKeys.delete(kid);
    return true;
  }
}
