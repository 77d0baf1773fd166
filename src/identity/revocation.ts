import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import * as store from './store.js';

/** Generations of exchanged tokens a revocation follows: exchange refuses chains past MAX_ACT_DEPTH (8), so all of them. */
const MAX_CHAIN_DEPTH = 12;

/**
 * Marks the given tokens revoked, and every token exchanged from them, down the chain; answers how
 * many were revoked.
 */
export async function revokeTokenChain(db: Kysely<Database>, tenantId: string, jtis: string[], at: string): Promise<number> {
  let frontier = jtis;
  let total = 0;
  for (let depth = 0; frontier.length && depth < MAX_CHAIN_DEPTH; depth++) {
    await store.revokeTokens(db, tenantId, frontier, at);
    total += frontier.length;
    frontier = await store.activeChildTokens(db, tenantId, frontier);
  }
  return total;
}
