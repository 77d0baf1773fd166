import { type AuditInput, recordAudit } from '../tenancy/audit.js';
import { importJWK, type CryptoKey, type JWK } from 'jose';
import type { Db } from '../db/database.js';
import { Conflict } from '../errors.js';
import { privateJwkColumn, publicJwkColumn } from './columns.js';
import { open, seal } from './encryption.js';
import * as store from './store.js';
import type { Clock } from '../clock.js';
import { iso, AGENT_KEY_GRACE_S, type PublicJwk, generateEs256Key, maxGeneration } from './key-material.js';

/** Agents' own key pairs (their JWKS, SVIDs and the assertions they sign): rotation and revocation. */

type AgentKeyStatus = 'active' | 'rotated' | 'revoked';

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
function agentKeyPublished(row: store.AgentKeyRow, now: number): boolean {
  if (row.status === 'active') return true;
  return row.status === 'rotated' && row.expires_at !== null && Date.parse(row.expires_at) > now;
}

export const publishedJwk = (row: { kid: string; public_jwk: string }) => ({
  ...publicJwkColumn(row.public_jwk, 'identity_agent_keys.public_jwk'),
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

  async rotate(
    tenantId: string,
    agentId: string,
    /** The audit event of the rotation, written in its transaction. */
    audit: (rotated: { key: store.AgentKeyRow; previous: store.AgentKeyRow[] }) => AuditInput,
  ): Promise<{ key: store.AgentKeyRow; privateJwk: JWK; previous: store.AgentKeyRow[] }> {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const { row, privateJwk } = await this.newRow(tenantId, agentId, 0);
        return await this.db.kysely.transaction().execute(async (trx) => {
          const before = await store.listAgentKeys(trx, tenantId, agentId);
          row.generation = (before[0]?.generation ?? 0) + 1;
          const now = this.clock.now();
          await store.rotateAgentKeys(trx, tenantId, agentId, { at: iso(now), expiresAt: iso(now + AGENT_KEY_GRACE_S * 1000) });
          await store.insertAgentKey(trx, row);
          const previous = (await store.listAgentKeys(trx, tenantId, agentId)).filter(
            (r) => r.status === 'rotated' && before.some((b) => b.kid === r.kid && b.status === 'active'),
          );
          await recordAudit(trx, audit({ key: row, previous }));
          return { key: row, privateJwk, previous };
        });
      } catch (err) {
        if (!store.isUniqueViolation(err)) throw err;
        // A concurrent rotation or first-use creation took this generation; go again.
      }
    }
    throw new Conflict('key_rotation_conflict', 'the agent key is being rotated concurrently; retry');
  }

  /**
   * Revokes one key of the agent; null when the agent has no such key. `trx`: the transaction the
   * caller revokes what depends on the key in, and audits it.
   */
  async revoke(
    trx: store.Executor,
    { tenantId, agentId, kid }: { tenantId: string; agentId: string; kid: string },
  ): Promise<{ row: store.AgentKeyRow; changed: boolean } | null> {
    const row = await store.findAgentKey(trx, tenantId, agentId, kid);
    if (!row) return null;
    if (row.status === 'revoked') return { row, changed: false };
    const at = iso(this.clock.now());
    await store.updateAgentKey(trx, tenantId, kid, { status: 'revoked', revoked_at: at });
    return { row: { ...row, status: 'revoked', revoked_at: at }, changed: true };
  }

  /** A published key of the agent by kid, for verifying its client assertions. */
  async verificationKey(tenantId: string, agentId: string, kid: string): Promise<{ row: store.AgentKeyRow; key: CryptoKey } | null> {
    const row = await store.findAgentKey(this.db.kysely, tenantId, agentId, kid);
    if (!row || !agentKeyPublished(row, this.clock.now())) return null;
    return { row, key: (await importJWK(publicJwkColumn(row.public_jwk, 'identity_agent_keys.public_jwk'), 'ES256')) as CryptoKey };
  }

  /** The agent's active private key, for a runtime that signs on the agent's behalf in-process. */
  async signingKey(tenantId: string, agentId: string): Promise<{ kid: string; key: CryptoKey }> {
    const row = await this.ensureActive(tenantId, agentId);
    const jwk = privateJwkColumn(open(this.masterKey, row.private_jwk, this.aad(row.kid)), 'identity_agent_keys.private_jwk');
    return { kid: row.kid, key: (await importJWK(jwk, 'ES256')) as CryptoKey };
  }
}
