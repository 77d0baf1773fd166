import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditBuffer } from '../../src/tenancy/audit-buffer.js';
import { ManualClock } from '../../src/clock.js';
import { TtlCache } from '../../src/identity/cache.js';
import { startApp, type TestApp } from '../helpers/app.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('AuditBuffer', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('writes every queued event with its values, in full batches and in a remainder of several statements', async () => {
    const tenant = await t.tenant('buffered');
    const errors: unknown[] = [];
    const buffer = new AuditBuffer(t.db, (err) => errors.push(err));
    const n = AuditBuffer.MAX_BATCH + 43; // one full batch, then 32 + 8 + 2 + 1 rows
    const before = new Date().toISOString();
    for (let i = 0; i < n; i++) {
      if (i % 2)
        buffer.addRow({
          tenant_id: tenant.id,
          actor_type: 'agent',
          actor_id: `caller-${i}`,
          action: 'test.buffered',
          resource_type: 'agent',
          resource_id: i % 3 ? `callee-${i}` : null,
          detail: JSON.stringify({ i, quote: 'a "b" \\ c' }),
        });
      else
        buffer.add({
          tenantId: tenant.id,
          actor: { type: 'agent', id: null },
          action: 'test.buffered',
          resourceType: 'agent',
          detail: { i },
        });
    }
    await buffer.flush();
    expect(errors).toEqual([]);
    const rows = await t.db.kysely.selectFrom('audit_events').selectAll().where('action', '=', 'test.buffered').orderBy('id').execute();
    expect(rows).toHaveLength(n);
    rows.forEach((row, i) => {
      expect(row.id).toMatch(UUID_V7);
      expect(row.tenant_id).toBe(tenant.id);
      expect(row.created_at >= before && row.created_at <= new Date().toISOString()).toBe(true);
      // Stamped as the rest of the platform stamps (ISO 8601 UTC with milliseconds).
      expect(new Date(row.created_at).toISOString()).toBe(row.created_at);
      if (i % 2) {
        expect(row).toMatchObject({
          actor_type: 'agent',
          actor_id: `caller-${i}`,
          resource_type: 'agent',
          resource_id: i % 3 ? `callee-${i}` : null,
        });
        expect(JSON.parse(row.detail)).toEqual({ i, quote: 'a "b" \\ c' });
      } else {
        expect(row).toMatchObject({ actor_type: 'agent', actor_id: null, resource_id: null });
        expect(JSON.parse(row.detail)).toEqual({ i });
      }
    });
    // Shown by the API like any other event.
    const listed = await t.api(tenant.key).GET('/api/v1/audit-events', { params: { query: { action: 'test.buffered', limit: 5 } } });
    expect(listed.response.status).toBe(200);
    expect(listed.data!.total).toBe(n);
  });

  it('reports a failed batch and goes on with the next', async () => {
    const tenant = await t.tenant('failing');
    const errors: unknown[] = [];
    const buffer = new AuditBuffer(t.db, (err) => errors.push(err));
    const event = {
      tenant_id: tenant.id,
      actor_type: 'agent',
      actor_id: null,
      action: 'test.failing',
      resource_type: 'agent',
      resource_id: null,
    };
    buffer.addRow({ ...event, detail: null as unknown as string }); // detail is not null
    await buffer.flush();
    expect(errors).toHaveLength(1);
    buffer.addRow({ ...event, detail: '{}' });
    await buffer.flush();
    expect(errors).toHaveLength(1);
    const rows = await t.db.kysely.selectFrom('audit_events').select('id').where('action', '=', 'test.failing').execute();
    expect(rows).toHaveLength(1);
  });
});

describe('TtlCache', () => {
  it('answers a repeated key from its last entry only while that entry is in the cache and current', () => {
    const clock = new ManualClock();
    const cache = new TtlCache<string>({ ttlMs: 1000, max: 2, clock });
    const key = 'k'.repeat(500);
    cache.set(key, 'a');
    expect(cache.get(key)).toBe('a');
    expect(cache.get('k'.repeat(500))).toBe('a'); // an equal, separate string
    cache.set(key, 'b');
    expect(cache.get(key)).toBe('b');
    cache.clear();
    expect(cache.get(key)).toBeUndefined();
    cache.set(key, 'c');
    expect(cache.get(key)).toBe('c');
    clock.advance(999);
    expect(cache.get(key)).toBe('c');
    clock.advance(1);
    expect(cache.get(key)).toBeUndefined();
    cache.set(key, 'd');
    expect(cache.get(key)).toBe('d');
    cache.set('x', 'x');
    cache.set('y', 'y'); // over the bound: the oldest (key) goes
    expect(cache.get(key)).toBeUndefined();
    expect(cache.get('x')).toBe('x');
  });

  it('keeps an entry set for less than the TTL only that long, and one set for more only the TTL', () => {
    const clock = new ManualClock('2030-01-01T00:00:00.000Z');
    const cache = new TtlCache<string>({ ttlMs: 1000, clock });
    cache.set('short', 's', 300);
    cache.set('long', 'l', 5000);
    clock.advance(299);
    expect([cache.get('short'), cache.get('long')]).toEqual(['s', 'l']);
    clock.advance(1);
    expect(cache.get('short')).toBeUndefined();
    clock.advance(699);
    expect(cache.get('long')).toBe('l');
    clock.advance(1);
    expect(cache.get('long')).toBeUndefined();
  });
});
