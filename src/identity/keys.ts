import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Db } from '../db/database.js';
import { conflict } from '../http/errors.js';
import { open, seal } from './encryption.js';
import * as store from './store.js';

/** Time source of the identity domain; tests move it to check expiry and key lifetimes. */
export interface Clock {
  now(): number;
}

export const iso = (ms: number) => new Date(ms).toISOString();

/** Longest lifetime of anything the platform signs (SVIDs and badges: 24 h). */
export const MAX_TOKEN_LIFETIME_S = 86_400;
/** Allowance for clock skew between the platform and verifiers. */
export const SKEW_S = 300;
/** A new platform key is published this long before it signs: the platform JWKS may be cached for 1 h. */
export const DEFAULT_PLATFORM_ACTIVATION_DELAY_S = 3600;
/** A rotated agent key stays published (and accepted for client authentication) this long. */
export const AGENT_KEY_GRACE_S = 86_400;
/** How long a process trusts its in-memory copy of the platform keys before reading them again. */
export const PLATFORM_KEY_CACHE_MS = 5_000;

export interface PublicJwk {
  kty: string;
  crv: string;
  x: string;
  y: string;
}

export interface GeneratedKey {
  kid: string;
  publicJwk: PublicJwk;
  privateJwk: JWK;
}

/** A fresh ES256 (EC P-256) key pair; the kid is the RFC 7638 thumbprint of the public key. */
export async function generateEs256Key(): Promise<GeneratedKey> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const pub = await exportJWK(publicKey);
  const publicJwk = { kty: pub.kty!, crv: pub.crv!, x: pub.x!, y: pub.y! };
  const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
  return { kid, publicJwk, privateJwk: await exportJWK(privateKey) };
}

// ------------------------------------------------------------------------------------------------
// Platform keys
// ------------------------------------------------------------------------------------------------

export type PlatformKeyStatus = 'pending' | 'active' | 'retired' | 'expired' | 'revoked';

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
export function platformKeyStatus(row: store.PlatformKeyRow, now: number): PlatformKeyStatus {
  if (row.revoked_at) return 'revoked';
  const end = publicationEnd(row.retires_at);
  if (end !== null && end <= now) return 'expired';
  if (Date.parse(row.activates_at) > now) return 'pending';
  if (row.retires_at !== null && Date.parse(row.retires_at) <= now) return 'retired';
  return 'active';
}

const maxGeneration = (rows: { generation: number }[]) => rows.reduce((m, r) => Math.max(m, r.generation), 0);

const isPublished = (s: PlatformKeyStatus) => s === 'pending' || s === 'active' || s === 'retired';

interface LoadedKeys {
  rows: store.PlatformKeyRow[];
  loadedAt: number;
}

/**
 * The platform's ES256 keys: they sign SVIDs, badges and access tokens. Verification keys are kept
 * in memory (refreshed every few seconds, at once on an unknown kid, and at once after a change made
 * by this process), so checking a token costs no database round trip for its key.
 */
export class PlatformKeyring {
  private cache: LoadedKeys | null = null;
  private loading: Promise<LoadedKeys> | null = null;
  private lastMissReload = 0;
  private readonly verifyKeys = new Map<string, Promise<CryptoKey>>();
  private readonly signKeys = new Map<string, Promise<CryptoKey>>();

  constructor(
    private readonly db: Db,
    private readonly masterKey: Buffer,
    private readonly clock: Clock,
  ) {}

  private aad = (kid: string) => `platform-key:${kid}`;

  private async load(): Promise<LoadedKeys> {
    this.loading ??= store
      .listPlatformKeys(this.db.kysely)
      .then((rows) => (this.cache = { rows, loadedAt: Date.now() }))
      .finally(() => (this.loading = null));
    return this.loading;
  }

  private async rows(): Promise<store.PlatformKeyRow[]> {
    const c = this.cache;
    if (c && Date.now() - c.loadedAt < PLATFORM_KEY_CACHE_MS) return c.rows;
    return (await this.load()).rows;
  }

  invalidate() {
    this.cache = null;
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
    const rows = (await this.load()).rows;
    const statuses = rows.map((row) => ({ row, status: platformKeyStatus(row, now) }));
    return {
      published: statuses.filter((k) => isPublished(k.status)).map((k) => k.row),
      sequence: statuses.reduce((n, k) => n + 1 + (isPublished(k.status) ? 0 : 1), 0),
    };
  }

  async list(): Promise<PlatformKeyView[]> {
    const now = this.clock.now();
    return (await this.load()).rows.map((row) => ({
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

  /** The public key for a kid, if that key is published (pending, active or retired). */
  async verificationKey(kid: string): Promise<CryptoKey | null> {
    let rows = await this.rows();
    let row = rows.find((r) => r.kid === kid);
    if (!row && Date.now() - this.lastMissReload > 1000) {
      // Possibly a key created by another process since the last load.
      this.lastMissReload = Date.now();
      rows = (await this.load()).rows;
      row = rows.find((r) => r.kid === kid);
    }
    if (!row || !isPublished(platformKeyStatus(row, this.clock.now()))) return null;
    let key = this.verifyKeys.get(kid);
    if (!key) {
      key = importJWK(JSON.parse(row.public_jwk) as JWK, 'ES256') as Promise<CryptoKey>;
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
      row = this.signingRow((await this.load()).rows);
      if (!row) throw new Error('no platform signing key is available');
    }
    const kid = row.kid;
    let key = this.signKeys.get(kid);
    if (!key) {
      const sealed = row.private_jwk;
      key = importJWK(JSON.parse(open(this.masterKey, sealed, this.aad(kid))) as JWK, 'ES256') as Promise<CryptoKey>;
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
      const rows = (await this.load()).rows;
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
      const key = await this.insertGeneration(maxGeneration((await this.load()).rows) + 1, activationDelayS);
      this.invalidate();
      if (key) return (await this.list()).find((k) => k.kid === key.kid)!;
    }
    throw conflict('key_rotation_conflict', 'another process is rotating the platform key; retry');
  }

  /** Revokes a platform key: it leaves the JWKS and trust bundle, and its tokens stop verifying. */
  async revoke(kid: string): Promise<boolean> {
    const now = this.clock.now();
    const row = (await this.load()).rows.find((r) => r.kid === kid);
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

// ------------------------------------------------------------------------------------------------
// Agent keys
// ------------------------------------------------------------------------------------------------

export type AgentKeyStatus = 'active' | 'rotated' | 'revoked';

export interface AgentKeyView {
  kid: string;
  status: AgentKeyStatus | 'expired';
  createdAt: string;
  rotatedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  publicJwk: PublicJwk & { kid: string; use: 'sig'; alg: 'ES256' };
}

/** Active keys, and rotated keys until they expire, are published; revoked keys never. */
export function agentKeyPublished(row: store.AgentKeyRow, now: number): boolean {
  if (row.status === 'active') return true;
  return row.status === 'rotated' && row.expires_at !== null && Date.parse(row.expires_at) > now;
}

export const publishedJwk = (row: { kid: string; public_jwk: string }) => ({
  ...(JSON.parse(row.public_jwk) as PublicJwk),
  kid: row.kid,
  use: 'sig' as const,
  alg: 'ES256' as const,
});

/**
 * Each agent's own ES256 keys (agent JWKS; `private_key_jwt` client authentication). Created on first
 * use; rotation marks the active key `rotated` (published for AGENT_KEY_GRACE_S more); revocation
 * removes a key at once. Generations are unique per agent, so concurrent creators cannot both win.
 */
export class AgentKeyring {
  constructor(
    private readonly db: Db,
    private readonly masterKey: Buffer,
    private readonly clock: Clock,
  ) {}

  private aad = (kid: string) => `agent-key:${kid}`;

  view(row: store.AgentKeyRow): AgentKeyView {
    const expired = row.status === 'rotated' && !agentKeyPublished(row, this.clock.now());
    return {
      kid: row.kid,
      status: expired ? 'expired' : (row.status as AgentKeyStatus),
      createdAt: row.created_at,
      rotatedAt: row.rotated_at,
      expiresAt: row.expires_at,
      revokedAt: row.revoked_at,
      publicJwk: publishedJwk(row),
    };
  }

  private async newRow(tenantId: string, agentId: string, generation: number): Promise<{ row: store.AgentKeyRow; privateJwk: JWK }> {
    const generated = await generateEs256Key();
    return {
      privateJwk: generated.privateJwk,
      row: {
        kid: generated.kid,
        tenant_id: tenantId,
        agent_id: agentId,
        generation,
        public_jwk: JSON.stringify(generated.publicJwk),
        private_jwk: seal(this.masterKey, JSON.stringify(generated.privateJwk), this.aad(generated.kid)),
        status: 'active',
        created_at: iso(this.clock.now()),
        rotated_at: null,
        expires_at: null,
        revoked_at: null,
      },
    };
  }

  /** The agent's active key, created when it has none (first use, or after its key was revoked). */
  async ensureActive(tenantId: string, agentId: string): Promise<store.AgentKeyRow> {
    for (let attempt = 0; attempt < 5; attempt++) {
      // One read gives both the active key and the highest generation (see PlatformKeyring).
      const rows = await store.listAgentKeys(this.db.kysely, tenantId, agentId);
      const active = rows.find((r) => r.status === 'active');
      if (active) return active;
      const { row } = await this.newRow(tenantId, agentId, maxGeneration(rows) + 1);
      if (await store.insertAgentKeyIfAbsent(this.db.kysely, row)) return row;
      // Another process created that generation first: read again.
    }
    throw new Error('could not create an agent key');
  }

  async list(tenantId: string, agentId: string): Promise<store.AgentKeyRow[]> {
    return store.listAgentKeys(this.db.kysely, tenantId, agentId);
  }

  async published(tenantId: string, agentId: string): Promise<store.AgentKeyRow[]> {
    await this.ensureActive(tenantId, agentId);
    const now = this.clock.now();
    return (await this.list(tenantId, agentId)).filter((r) => agentKeyPublished(r, now));
  }

  async rotate(tenantId: string, agentId: string): Promise<{ key: store.AgentKeyRow; privateJwk: JWK; previous: store.AgentKeyRow[] }> {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const { row, privateJwk } = await this.newRow(tenantId, agentId, 0);
        return await this.db.kysely.transaction().execute(async (trx) => {
          const before = await store.listAgentKeys(trx, tenantId, agentId);
          row.generation = (before[0]?.generation ?? 0) + 1;
          const now = this.clock.now();
          await store.rotateAgentKeys(trx, tenantId, agentId, iso(now), iso(now + AGENT_KEY_GRACE_S * 1000));
          await store.insertAgentKey(trx, row);
          const previous = (await store.listAgentKeys(trx, tenantId, agentId)).filter(
            (r) => r.status === 'rotated' && before.some((b) => b.kid === r.kid && b.status === 'active'),
          );
          return { key: row, privateJwk, previous };
        });
      } catch (err) {
        if (!store.isUniqueViolation(err)) throw err;
        // A concurrent rotation or first-use creation took this generation; go again.
      }
    }
    throw conflict('key_rotation_conflict', 'the agent key is being rotated concurrently; retry');
  }

  /** Revokes one key of the agent; null when the agent has no such key. */
  async revoke(tenantId: string, agentId: string, kid: string): Promise<{ row: store.AgentKeyRow; changed: boolean } | null> {
    const row = await store.findAgentKey(this.db.kysely, tenantId, agentId, kid);
    if (!row) return null;
    if (row.status === 'revoked') return { row, changed: false };
    const at = iso(this.clock.now());
    await store.updateAgentKey(this.db.kysely, tenantId, kid, { status: 'revoked', revoked_at: at });
    return { row: { ...row, status: 'revoked', revoked_at: at }, changed: true };
  }

  /** A published key of the agent by kid, for verifying its client assertions. */
  async verificationKey(tenantId: string, agentId: string, kid: string): Promise<{ row: store.AgentKeyRow; key: CryptoKey } | null> {
    const row = await store.findAgentKey(this.db.kysely, tenantId, agentId, kid);
    if (!row || !agentKeyPublished(row, this.clock.now())) return null;
    return { row, key: (await importJWK(JSON.parse(row.public_jwk) as JWK, 'ES256')) as CryptoKey };
  }

  /** The agent's active private key, for a runtime that signs on the agent's behalf in-process. */
  async signingKey(tenantId: string, agentId: string): Promise<{ kid: string; key: CryptoKey }> {
    const row = await this.ensureActive(tenantId, agentId);
    const jwk = JSON.parse(open(this.masterKey, row.private_jwk, this.aad(row.kid))) as JWK;
    return { kid: row.kid, key: (await importJWK(jwk, 'ES256')) as CryptoKey };
  }
}
