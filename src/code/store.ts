import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** SQL for code executions' slots: the only module that names the `code_slots` table. */

type Executor = Kysely<Database>;

export interface SlotClaim {
  tenantId: string;
  slot: number;
  holder: string;
  now: string;
  expiresAt: string;
}

/**
 * Takes slot `slot` of the tenant for `holder` when it is free: never taken, or its holder's expiry
 * passed. One statement, so two replicas asking for the same slot cannot both get it.
 */
export async function takeSlot(db: Executor, { tenantId, slot, holder, now, expiresAt }: SlotClaim): Promise<boolean> {
  const result = await db
    .insertInto('code_slots')
    .values({ tenant_id: tenantId, slot, holder, expires_at: expiresAt })
    .onConflict((oc) =>
      oc.columns(['tenant_id', 'slot']).doUpdateSet({ holder, expires_at: expiresAt }).where('code_slots.expires_at', '<=', now),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** The slots of the tenant held now, below `slots` (those above a lowered limit count no more). */
export async function heldSlots(db: Executor, tenantId: string, slots: number, now: string): Promise<number[]> {
  const rows = await db
    .selectFrom('code_slots')
    .select('slot')
    .where('tenant_id', '=', tenantId)
    .where('slot', '<', slots)
    .where('expires_at', '>', now)
    .execute();
  return rows.map((r) => r.slot);
}

export async function releaseSlot(db: Executor, tenantId: string, slot: number, holder: string): Promise<void> {
  await db.deleteFrom('code_slots').where('tenant_id', '=', tenantId).where('slot', '=', slot).where('holder', '=', holder).execute();
}
