import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as store from '../../src/code/store.js';
import type { Db } from '../../src/db/database.js';
import { openTestDb } from '../helpers/app.js';

/** The slots of a tenant's concurrent code executions (code/store.ts), shared by every replica. */

let db: Db;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ db, close } = await openTestDb());
});
afterAll(() => close());

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const claim = (slot: number, holder: string, now: number, expires: number) =>
  store.takeSlot(db.kysely, { tenantId: 'tenant-1', slot, holder, now: at(now), expiresAt: at(expires) });

describe('a code slot', () => {
  test('is taken once: a second holder is refused while it is held', async () => {
    expect(await claim(0, 'a', 0, 30)).toBe(true);
    expect(await claim(0, 'b', 1, 31)).toBe(false);
    expect(await store.heldSlots(db.kysely, 'tenant-1', 2, at(1))).toEqual([0]);
    // Another tenant's slot 0 is its own.
    expect(await store.takeSlot(db.kysely, { tenantId: 'tenant-2', slot: 0, holder: 'c', now: at(1), expiresAt: at(31) })).toBe(true);
  });

  test('held by a replica that died, frees at its expiry and is taken by the next', async () => {
    expect(await claim(0, 'b', 29, 59)).toBe(false);
    expect(await store.heldSlots(db.kysely, 'tenant-1', 2, at(30))).toEqual([]);
    expect(await claim(0, 'b', 30, 60)).toBe(true);
    // The dead holder's late release does not free the new holder's slot.
    await store.releaseSlot(db.kysely, 'tenant-1', 0, 'a');
    expect(await store.heldSlots(db.kysely, 'tenant-1', 2, at(31))).toEqual([0]);
    await store.releaseSlot(db.kysely, 'tenant-1', 0, 'b');
    expect(await store.heldSlots(db.kysely, 'tenant-1', 2, at(31))).toEqual([]);
  });

  test('above a lowered limit counts no more', async () => {
    expect(await claim(3, 'd', 40, 70)).toBe(true);
    expect(await store.heldSlots(db.kysely, 'tenant-1', 2, at(41))).toEqual([]);
    expect(await store.heldSlots(db.kysely, 'tenant-1', 4, at(41))).toEqual([3]);
  });
});
