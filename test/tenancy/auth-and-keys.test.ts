import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, secretOf, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: { id: string; key: string };
let other: { id: string; key: string };

beforeAll(async () => {
  t = await startApp();
  admin = await t.tenant('acme');
  other = await t.tenant('globex');
});
afterAll(() => t.close());

async function keyWith(permissions: string[], owner = admin) {
  const res = await t.request('POST', '/api/v1/api-keys', { key: owner.key, body: { name: permissions.join('+') || 'none', permissions } });
  expect(res.status).toBe(201);
  return res.body as { apiKey: { id: string }; key: string };
}

describe('authentication', () => {
  it('refuses a request without credentials with 401 and WWW-Authenticate', async () => {
    const res = await t.request('GET', '/api/v1/agents');
    expectProblem(res, 401, 'missing_credentials');
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('refuses other schemes and unknown keys', async () => {
    expectProblem(
      await t.request('GET', '/api/v1/agents', { headers: { authorization: `Basic ${admin.key}` } }),
      401,
      'invalid_credentials',
    );
    expectProblem(await t.request('GET', '/api/v1/agents', { key: 'agk_nope' }), 401, 'invalid_credentials');
    // Right id, wrong secret.
    const forged = admin.key.slice(0, -4) + (admin.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expectProblem(await t.request('GET', '/api/v1/agents', { key: forged }), 401, 'invalid_credentials');
  });

  it('reports who the caller is', async () => {
    const res = await t.request('GET', '/api/v1/tenant', { key: admin.key });
    expect(res.status).toBe(200);
    expect(res.body.tenant).toMatchObject({ id: admin.id, name: 'acme' });
    expect(res.body.credential.permissions.sort()).toEqual(
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
    expect((await t.request('GET', '/api/v1/agents', { key: reader.key })).status).toBe(200);
    expectProblem(await t.request('POST', '/api/v1/agents', { key: reader.key, body: { name: 'a', appId: 'b' } }), 403, 'forbidden');
    expectProblem(await t.request('GET', '/api/v1/api-keys', { key: reader.key }), 403, 'forbidden');
    expectProblem(await t.request('GET', '/api/v1/audit-events', { key: reader.key }), 403, 'forbidden');
  });

  it('denies a writer without agents:read the reads', async () => {
    const writer = await keyWith(['agents:write']);
    expectProblem(await t.request('GET', '/api/v1/agents', { key: writer.key }), 403, 'forbidden');
    expect((await t.request('POST', '/api/v1/agents', { key: writer.key, body: { name: 'w', appId: 'b' } })).status).toBe(201);
  });
});

describe('API keys over HTTP', () => {
  it('creates a key shown once, lists it without secret, and revokes it', async () => {
    const created = await keyWith(['agents:read', 'agents:write']);
    expect(created.key).toMatch(/^agk_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    expect((await t.request('GET', '/api/v1/agents', { key: created.key })).status).toBe(200);

    const list = await t.request('GET', '/api/v1/api-keys?limit=100', { key: admin.key });
    expect(list.status).toBe(200);
    const entry = list.body.apiKeys.find((k: { id: string }) => k.id === created.apiKey.id);
    expect(entry).toMatchObject({ permissions: ['agents:read', 'agents:write'], revokedAt: null });
    expect(list.text).not.toContain(secretOf(created.key));
    expect(list.body).toMatchObject({ page: 1, limit: 100 });

    const revoke = await t.request('DELETE', `/api/v1/api-keys/${created.apiKey.id}`, { key: admin.key });
    expect(revoke.status).toBe(204);
    expectProblem(await t.request('GET', '/api/v1/agents', { key: created.key }), 401, 'invalid_credentials');

    const after = await t.request('GET', '/api/v1/api-keys?limit=100', { key: admin.key });
    expect(after.body.apiKeys.some((k: { id: string }) => k.id === created.apiKey.id)).toBe(false);
    const withRevoked = await t.request('GET', '/api/v1/api-keys?limit=100&includeRevoked=true', { key: admin.key });
    expect(withRevoked.body.apiKeys.find((k: { id: string }) => k.id === created.apiKey.id).revokedAt).toMatch(/Z$/);
  });

  it('validates permissions', async () => {
    const res = await t.request('POST', '/api/v1/api-keys', { key: admin.key, body: { name: 'x', permissions: ['agents:fly'] } });
    expectProblem(res, 400, 'validation_failed');
    expectProblem(
      await t.request('POST', '/api/v1/api-keys', { key: admin.key, body: { name: 'x', permissions: [] } }),
      400,
      'validation_failed',
    );
  });

  it('never grants more than the granting key holds', async () => {
    const settingsOnly = await keyWith(['settings:write']);
    const res = await t.request('POST', '/api/v1/api-keys', { key: settingsOnly.key, body: { name: 'x', permissions: ['agents:write'] } });
    expectProblem(res, 403, 'forbidden');
  });

  it("hides another tenant's keys", async () => {
    const mine = await keyWith(['agents:read']);
    expectProblem(await t.request('DELETE', `/api/v1/api-keys/${mine.apiKey.id}`, { key: other.key }), 404, 'not_found');
    expect((await t.request('GET', '/api/v1/agents', { key: mine.key })).status).toBe(200);
    const list = await t.request('GET', '/api/v1/api-keys', { key: other.key });
    expect(list.body.apiKeys.every((k: { id: string }) => k.id !== mine.apiKey.id)).toBe(true);
  });
});

describe('changing keys that hold more', () => {
  it('refuses a settings:write key to revoke or throttle a key holding permissions it lacks', async () => {
    const settings = await keyWith(['settings:read', 'settings:write']);
    const writer = await keyWith(['agents:read', 'agents:write']);
    const adminKeyId = (await t.request('GET', '/api/v1/tenant', { key: admin.key })).body.credential.id;
    for (const target of [writer.apiKey.id, adminKeyId]) {
      const revoke = await t.request('DELETE', `/api/v1/api-keys/${target}`, { key: settings.key });
      expectProblem(revoke, 403, 'forbidden');
      expect(revoke.body.detail).toContain('agents:');
      expectProblem(
        await t.request('PATCH', `/api/v1/api-keys/${target}`, { key: settings.key, body: { rateLimitPerMinute: 1 } }),
        403,
        'forbidden',
      );
    }
    // Both keys untouched: still working, no limit of their own.
    expect((await t.request('GET', '/api/v1/agents', { key: writer.key })).status).toBe(200);
    expect((await t.request('GET', '/api/v1/agents', { key: admin.key })).status).toBe(200);
    const list = await t.request('GET', '/api/v1/api-keys?limit=100', { key: admin.key });
    for (const target of [writer.apiKey.id, adminKeyId]) {
      expect(list.body.apiKeys.find((k: { id: string }) => k.id === target)).toMatchObject({ rateLimitPerMinute: null, revokedAt: null });
    }
  });

  it('lets a key change keys its permissions cover, itself included', async () => {
    const settings = await keyWith(['settings:read', 'settings:write']);
    const reader = await keyWith(['settings:read']);
    const patched = await t.request('PATCH', `/api/v1/api-keys/${reader.apiKey.id}`, {
      key: settings.key,
      body: { rateLimitPerMinute: 5 },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.rateLimitPerMinute).toBe(5);
    expect((await t.request('DELETE', `/api/v1/api-keys/${reader.apiKey.id}`, { key: settings.key })).status).toBe(204);
    expect((await t.request('DELETE', `/api/v1/api-keys/${settings.apiKey.id}`, { key: settings.key })).status).toBe(204);
    expectProblem(await t.request('GET', '/api/v1/api-keys', { key: settings.key }), 401, 'invalid_credentials');
  });
});

describe('the last all-permission key', () => {
  it('cannot be revoked over the API while no other key holds every permission (409), and can once one does', async () => {
    const lone = await t.tenant('lone');
    const loneKeyId = (await t.request('GET', '/api/v1/tenant', { key: lone.key })).body.credential.id;
    const refused = await t.request('DELETE', `/api/v1/api-keys/${loneKeyId}`, { key: lone.key });
    expectProblem(refused, 409, 'last_admin_key');
    expect(refused.body.detail).toMatch(/last active key holding every permission/);
    expect((await t.request('GET', '/api/v1/agents', { key: lone.key })).status).toBe(200);

    // A key lacking one permission does not count as a replacement.
    await keyWith(['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read'], lone);
    expectProblem(await t.request('DELETE', `/api/v1/api-keys/${loneKeyId}`, { key: lone.key }), 409, 'last_admin_key');

    const second = await keyWith(['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read', 'skills:write'], lone);
    expect((await t.request('DELETE', `/api/v1/api-keys/${loneKeyId}`, { key: second.key })).status).toBe(204);
    // Now the second is the last one, even when it revokes itself.
    expectProblem(await t.request('DELETE', `/api/v1/api-keys/${second.apiKey.id}`, { key: second.key }), 409, 'last_admin_key');
    expect((await t.request('GET', '/api/v1/agents', { key: second.key })).status).toBe(200);
  });
});

describe('audit events', () => {
  it('records mutations with actor, resource and detail, filterable', async () => {
    const created = await t.request('POST', '/api/v1/agents', { key: admin.key, body: { name: 'audited', appId: 'x' } });
    const id = created.body.id;
    await t.request('POST', `/api/v1/agents/${id}`, { key: admin.key, body: { role: 'helper' } });
    await t.request('DELETE', `/api/v1/agents/${id}`, { key: admin.key });

    const res = await t.request('GET', `/api/v1/audit-events?resourceType=agent&resourceId=${id}`, { key: admin.key });
    expect(res.status).toBe(200);
    expect(res.body.events.map((e: { action: string }) => e.action)).toEqual(['agent.deleted', 'agent.updated', 'agent.created']);
    const adminKeyId = (await t.request('GET', '/api/v1/tenant', { key: admin.key })).body.credential.id;
    expect(res.body.events[2]).toMatchObject({
      actorType: 'api_key',
      actorId: adminKeyId,
      resourceType: 'agent',
      detail: { name: 'audited' },
    });
    expect(res.body.total).toBe(3);

    const byAction = await t.request('GET', '/api/v1/audit-events?action=agent.deleted', { key: admin.key });
    expect(byAction.body.events.every((e: { action: string }) => e.action === 'agent.deleted')).toBe(true);
    const future = await t.request('GET', '/api/v1/audit-events?since=2999-01-01T00:00:00Z', { key: admin.key });
    expect(future.body.total).toBe(0);
    expectProblem(await t.request('GET', '/api/v1/audit-events?since=yesterday', { key: admin.key }), 400, 'validation_failed');
  });

  it("never shows another tenant's events", async () => {
    const res = await t.request('GET', '/api/v1/audit-events?limit=100', { key: other.key });
    expect(
      res.body.events.every(
        (e: { action: string; resourceId: string }) => e.action.startsWith('tenant.') || e.action.startsWith('api_key.'),
      ),
    ).toBe(true);
    expect(res.body.total).toBe(2);
  });
});
