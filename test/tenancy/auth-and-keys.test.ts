import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, type Permission, secretOf, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: { id: string; key: string };
let other: { id: string; key: string };

beforeAll(async () => {
  t = await startApp();
  admin = await t.tenant('acme');
  other = await t.tenant('globex');
});
afterAll(() => t.close());

async function keyWith(permissions: Permission[], owner = admin) {
  const { data, error, response } = await t.api(owner.key).POST('/api/v1/api-keys', {
    body: { name: permissions.join('+') || 'none', permissions },
  });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!;
}

/** The id of the API key `key` itself. */
async function keyIdOf(key: string) {
  const { data, error, response } = await t.api(key).GET('/api/v1/tenant');
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!.credential.id!;
}

const listKeys = async (key: string, query: { limit?: number; includeRevoked?: boolean } = {}) => {
  const { data, error, response } = await t.api(key).GET('/api/v1/api-keys', { params: { query } });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!;
};
const listAgents = (key: string) => t.api(key).GET('/api/v1/agents');
const revokeKey = (key: string, id: string) => t.api(key).DELETE('/api/v1/api-keys/{id}', { params: { path: { id } } });

describe('authentication', () => {
  it('refuses a request without credentials with 401 and WWW-Authenticate', async () => {
    const res = await t.api().GET('/api/v1/agents');
    expectProblem(res, 401, 'missing_credentials');
    expect(res.response.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('refuses other schemes and unknown keys', async () => {
    expectProblem(await t.api().GET('/api/v1/agents', { headers: { authorization: `Basic ${admin.key}` } }), 401, 'invalid_credentials');
    expectProblem(await listAgents('agk_nope'), 401, 'invalid_credentials');
    // Right id, wrong secret.
    const forged = admin.key.slice(0, -4) + (admin.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expectProblem(await listAgents(forged), 401, 'invalid_credentials');
  });

  it('reports who the caller is', async () => {
    const { data, error, response } = await t.api(admin.key).GET('/api/v1/tenant');
    expect(response.status, JSON.stringify(error)).toBe(200);
    expect(data!.tenant).toMatchObject({ id: admin.id, name: 'acme' });
    expect(data!.credential.permissions.sort()).toEqual(
      ['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read', 'skills:write'].sort(),
    );
  });

  it('stores keys only as hashes', async () => {
    const rows = await t.db.kysely.selectFrom('api_keys').selectAll().execute();
    const secret = secretOf(admin.key);
    for (const row of rows) {
      expect(JSON.stringify(row)).not.toContain(secret);
      expect(row.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    }
  });
});

describe('permissions', () => {
  it('denies a read-only key writes with 403', async () => {
    const reader = await keyWith(['agents:read']);
    expect((await listAgents(reader.key)).response.status).toBe(200);
    expectProblem(await t.api(reader.key).POST('/api/v1/agents', { body: { name: 'a', appId: 'b' } }), 403, 'forbidden');
    expectProblem(await t.api(reader.key).GET('/api/v1/api-keys'), 403, 'forbidden');
    expectProblem(await t.api(reader.key).GET('/api/v1/audit-events'), 403, 'forbidden');
  });

  it('denies a writer without agents:read the reads', async () => {
    const writer = await keyWith(['agents:write']);
    expectProblem(await listAgents(writer.key), 403, 'forbidden');
    expect((await t.api(writer.key).POST('/api/v1/agents', { body: { name: 'w', appId: 'b' } })).response.status).toBe(201);
  });
});

describe('API keys over HTTP', () => {
  it('creates a key shown once, lists it without secret, and revokes it', async () => {
    const created = await keyWith(['agents:read', 'agents:write']);
    expect(created.key).toMatch(/^agk_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    expect((await listAgents(created.key)).response.status).toBe(200);

    const list = await listKeys(admin.key, { limit: 100 });
    const entry = list.apiKeys.find((k) => k.id === created.apiKey.id);
    expect(entry).toMatchObject({ permissions: ['agents:read', 'agents:write'], revokedAt: null });
    expect(JSON.stringify(list)).not.toContain(secretOf(created.key));
    expect(list).toMatchObject({ page: 1, limit: 100 });

    const revoke = await revokeKey(admin.key, created.apiKey.id);
    expect(revoke.response.status).toBe(204);
    expectProblem(await listAgents(created.key), 401, 'invalid_credentials');

    const after = await listKeys(admin.key, { limit: 100 });
    expect(after.apiKeys.some((k) => k.id === created.apiKey.id)).toBe(false);
    const withRevoked = await listKeys(admin.key, { limit: 100, includeRevoked: true });
    expect(withRevoked.apiKeys.find((k) => k.id === created.apiKey.id)!.revokedAt).toMatch(/Z$/);
  });

  it('validates permissions', async () => {
    // An unknown permission is outside the typed body: sent raw.
    const res = await t.raw('POST', '/api/v1/api-keys', { key: admin.key, body: { name: 'x', permissions: ['agents:fly'] } });
    expectProblem(res, 400, 'validation_failed');
    expectProblem(await t.api(admin.key).POST('/api/v1/api-keys', { body: { name: 'x', permissions: [] } }), 400, 'validation_failed');
  });

  it('never grants more than the granting key holds', async () => {
    const settingsOnly = await keyWith(['settings:write']);
    const res = await t.api(settingsOnly.key).POST('/api/v1/api-keys', { body: { name: 'x', permissions: ['agents:write'] } });
    expectProblem(res, 403, 'forbidden');
  });

  it("hides another tenant's keys", async () => {
    const mine = await keyWith(['agents:read']);
    expectProblem(await revokeKey(other.key, mine.apiKey.id), 404, 'not_found');
    expect((await listAgents(mine.key)).response.status).toBe(200);
    const list = await listKeys(other.key);
    expect(list.apiKeys.every((k) => k.id !== mine.apiKey.id)).toBe(true);
  });
});

describe('changing keys that hold more', () => {
  it('refuses a settings:write key to revoke or throttle a key holding permissions it lacks', async () => {
    const settings = await keyWith(['settings:read', 'settings:write']);
    const writer = await keyWith(['agents:read', 'agents:write']);
    const adminKeyId = await keyIdOf(admin.key);
    for (const target of [writer.apiKey.id, adminKeyId]) {
      const revoke = await revokeKey(settings.key, target);
      expectProblem(revoke, 403, 'forbidden');
      expect(revoke.error!.detail).toContain('agents:');
      expectProblem(
        await t.api(settings.key).PATCH('/api/v1/api-keys/{id}', { params: { path: { id: target } }, body: { rateLimitPerMinute: 1 } }),
        403,
        'forbidden',
      );
    }
    // Both keys untouched: still working, no limit of their own.
    expect((await listAgents(writer.key)).response.status).toBe(200);
    expect((await listAgents(admin.key)).response.status).toBe(200);
    const list = await listKeys(admin.key, { limit: 100 });
    for (const target of [writer.apiKey.id, adminKeyId]) {
      expect(list.apiKeys.find((k) => k.id === target)).toMatchObject({ rateLimitPerMinute: null, revokedAt: null });
    }
  });

  it('lets a key change keys its permissions cover, itself included', async () => {
    const settings = await keyWith(['settings:read', 'settings:write']);
    const reader = await keyWith(['settings:read']);
    const patched = await t.api(settings.key).PATCH('/api/v1/api-keys/{id}', {
      params: { path: { id: reader.apiKey.id } },
      body: { rateLimitPerMinute: 5 },
    });
    expect(patched.response.status, JSON.stringify(patched.error)).toBe(200);
    expect(patched.data!.rateLimitPerMinute).toBe(5);
    expect((await revokeKey(settings.key, reader.apiKey.id)).response.status).toBe(204);
    expect((await revokeKey(settings.key, settings.apiKey.id)).response.status).toBe(204);
    expectProblem(await t.api(settings.key).GET('/api/v1/api-keys'), 401, 'invalid_credentials');
  });
});

describe('the last all-permission key', () => {
  it('cannot be revoked over the API while no other key holds every permission (409), and can once one does', async () => {
    const lone = await t.tenant('lone');
    const loneKeyId = await keyIdOf(lone.key);
    const refused = await revokeKey(lone.key, loneKeyId);
    expectProblem(refused, 409, 'last_admin_key');
    expect(refused.error!.detail).toMatch(/last active key holding every permission/);
    expect((await listAgents(lone.key)).response.status).toBe(200);

    // A key lacking one permission does not count as a replacement.
    await keyWith(['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read'], lone);
    expectProblem(await revokeKey(lone.key, loneKeyId), 409, 'last_admin_key');

    const second = await keyWith(['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read', 'skills:write'], lone);
    expect((await revokeKey(second.key, loneKeyId)).response.status).toBe(204);
    // Now the second is the last one, even when it revokes itself.
    expectProblem(await revokeKey(second.key, second.apiKey.id), 409, 'last_admin_key');
    expect((await listAgents(second.key)).response.status).toBe(200);
  });
});

describe('audit events', () => {
  it('records mutations with actor, resource and detail, filterable', async () => {
    const api = t.api(admin.key);
    const created = await api.POST('/api/v1/agents', { body: { name: 'audited', appId: 'x' } });
    const id = created.data!.id;
    await api.POST('/api/v1/agents/{id}', { params: { path: { id } }, body: { role: 'helper' } });
    await api.DELETE('/api/v1/agents/{id}', { params: { path: { id } } });

    const res = await api.GET('/api/v1/audit-events', { params: { query: { resourceType: 'agent', resourceId: id } } });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const events = res.data!.events;
    expect(events.map((e) => e.action)).toEqual(['agent.deleted', 'agent.updated', 'agent.created']);
    const adminKeyId = await keyIdOf(admin.key);
    expect(events[2]).toMatchObject({
      actorType: 'api_key',
      actorId: adminKeyId,
      resourceType: 'agent',
      detail: { name: 'audited' },
    });
    expect(res.data!.total).toBe(3);

    const byAction = await api.GET('/api/v1/audit-events', { params: { query: { action: 'agent.deleted' } } });
    expect(byAction.data!.events.every((e) => e.action === 'agent.deleted')).toBe(true);
    const future = await api.GET('/api/v1/audit-events', { params: { query: { since: '2999-01-01T00:00:00Z' } } });
    expect(future.data!.total).toBe(0);
    expectProblem(await api.GET('/api/v1/audit-events', { params: { query: { since: 'yesterday' } } }), 400, 'validation_failed');
  });

  it("never shows another tenant's events", async () => {
    const { data, error, response } = await t.api(other.key).GET('/api/v1/audit-events', { params: { query: { limit: 100 } } });
    expect(response.status, JSON.stringify(error)).toBe(200);
    expect(data!.events.every((e) => e.action.startsWith('tenant.') || e.action.startsWith('api_key.'))).toBe(true);
    expect(data!.total).toBe(2);
  });
});
