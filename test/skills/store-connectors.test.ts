import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadStoreCatalog } from '../../src/skills/catalog.js';
import { CONNECTORS } from '../../src/skills/connectors/catalog.js';
import { expectProblem, startApp, type Permission, type TestApp } from '../helpers/app.js';
import { createSkill } from './helpers.js';

let t: TestApp;
let key: string;
let otherKey: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
});
afterAll(() => t.close());

const keyWith = (permissions: Permission[]) => t.key(key, permissions);

describe('the store catalog', () => {
  it('ships valid skills in the four example categories, each with references', () => {
    const catalog = loadStoreCatalog();
    expect(catalog.length).toBeGreaterThanOrEqual(5);
    expect(new Set(catalog.map((s) => s.category))).toEqual(new Set(['engineering', 'sales', 'support', 'finance']));
    for (const s of catalog) {
      expect(s.id).toBe(s.name);
      expect(s.references.length, s.name).toBeGreaterThanOrEqual(1);
      expect(s.instructions.length, s.name).toBeGreaterThan(1000);
    }
  });

  it('every skill a connector suggests is in the store', () => {
    const names = new Set(loadStoreCatalog().map((s) => s.name));
    for (const c of CONNECTORS) {
      expect(c.suggestedSkills.length, c.id).toBeGreaterThan(0);
      for (const s of c.suggestedSkills) expect(names, `${c.id} suggests ${s}`).toContain(s);
    }
  });
});

describe('store API', () => {
  it('lists the store with acquisition state, filters by category, shows one with instructions', async () => {
    const res = await t.request('GET', '/api/skills/store', { key });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(res.body.skills.length);
    const review = res.body.skills.find((s: { id: string }) => s.id === 'code-review');
    expect(review).toEqual({
      id: 'code-review',
      name: 'code-review',
      description: expect.stringContaining('pull request'),
      category: 'engineering',
      references: [
        { name: 'review-checklist.md', size: expect.any(Number) },
        { name: 'security-pitfalls.md', size: expect.any(Number) },
      ],
      scripts: [{ name: 'diff_stats.py', language: 'python', size: expect.any(Number) }],
      acquired: false,
      skillId: null,
    });
    const finance = await t.request('GET', '/api/skills/store?category=finance', { key });
    expect(finance.body.skills.map((s: { id: string }) => s.id)).toEqual(['invoice-reconciliation']);
    const one = await t.request('GET', '/api/skills/store/incident-response', { key });
    expect(one.status).toBe(200);
    expect(one.body.instructions).toContain('Mitigate first');
    expectProblem(await t.request('GET', '/api/skills/store/nothing-here', { key }), 404, 'not_found');
  });

  it('acquires a store skill as a tenant skill (source store), once', async () => {
    const res = await t.request('POST', '/api/skills/store/sql-analysis/acquire', { key });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      name: 'sql-analysis',
      source: 'store',
      storeId: 'sql-analysis',
      status: 'active',
      category: 'engineering',
      metadata: { version: '1.0', dialect: 'postgresql' },
      references: [{ name: 'pitfalls.md' }, { name: 'query-patterns.md' }],
    });
    expectProblem(await t.request('POST', '/api/skills/store/sql-analysis/acquire', { key }), 409, 'already_acquired');
    expectProblem(await t.request('POST', '/api/skills/store/unknown/acquire', { key }), 404, 'not_found');

    const store = await t.request('GET', '/api/skills/store', { key });
    expect(store.body.skills.find((s: { id: string }) => s.id === 'sql-analysis')).toMatchObject({ acquired: true, skillId: res.body.id });
    // Per tenant: the other tenant has not acquired it.
    const theirs = await t.request('GET', '/api/skills/store', { key: otherKey });
    expect(theirs.body.skills.find((s: { id: string }) => s.id === 'sql-analysis')).toMatchObject({ acquired: false, skillId: null });
    expect((await t.request('GET', '/api/skills?source=store', { key })).body.skills.map((s: { name: string }) => s.name)).toEqual([
      'sql-analysis',
    ]);
    // Still 409 while archived: restoring it is the way back.
    await t.request('DELETE', `/api/skills/${res.body.id}`, { key });
    expectProblem(await t.request('POST', '/api/skills/store/sql-analysis/acquire', { key }), 409, 'already_acquired');
  });

  it('keeps store skills read-only except for their status', async () => {
    const res = await t.request('POST', '/api/skills/store/sales-discovery/acquire', { key });
    expectProblem(
      await t.request('PATCH', `/api/skills/${res.body.id}`, { key, body: { instructions: 'mine now' } }),
      409,
      'store_skill_read_only',
    );
    const archived = await t.request('PATCH', `/api/skills/${res.body.id}`, { key, body: { status: 'archived' } });
    expect(archived.body.status).toBe('archived');
  });

  it('refuses to acquire a store skill whose name a custom skill already uses', async () => {
    await createSkill(t, otherKey, { name: 'support-triage' });
    expectProblem(await t.request('POST', '/api/skills/store/support-triage/acquire', { key: otherKey }), 409, 'skill_name_taken');
  });
});

describe('connectors API', () => {
  const github = { accessToken: `ghp_${'x'.repeat(36)}`, organization: 'acme-corp' };

  it('lists the catalog with connection state and the fields each needs', async () => {
    const res = await t.request('GET', '/api/v1/connectors', { key });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(8);
    expect(res.body.connectors.map((c: { id: string }) => c.id)).toEqual([
      'github',
      'jira',
      'slack',
      'salesforce',
      'zendesk',
      'stripe',
      'google-drive',
      'postgres',
    ]);
    const stripe = res.body.connectors.find((c: { id: string }) => c.id === 'stripe');
    expect(stripe).toMatchObject({
      name: 'Stripe',
      category: 'finance',
      connected: false,
      connection: null,
      suggestedSkills: ['invoice-reconciliation'],
      fields: expect.arrayContaining([expect.objectContaining({ name: 'secretKey', type: 'secret', secret: true, required: true })]),
    });
    const sales = await t.request('GET', '/api/v1/connectors?category=sales', { key });
    expect(sales.body.connectors.map((c: { id: string }) => c.id)).toEqual(['salesforce']);
    expectProblem(await t.request('GET', '/api/v1/connectors/myspace', { key }), 404, 'not_found');
  });

  it('connects with a validated configuration and never returns secrets', async () => {
    const res = await t.request('POST', '/api/v1/connectors/github/connect', { key, body: { configuration: github } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      id: 'github',
      connected: true,
      connection: { configuration: { accessToken: '********', organization: 'acme-corp' }, connectedBy: expect.any(String) },
    });
    expect(res.text).not.toContain(github.accessToken);
    const got = await t.request('GET', '/api/v1/connectors/github', { key });
    expect(got.body.connection.configuration).toEqual({ accessToken: '********', organization: 'acme-corp' });
    const list = await t.request('GET', '/api/v1/connectors?connected=true', { key });
    expect(list.body.connectors.map((c: { id: string }) => c.id)).toEqual(['github']);
    expect(list.text).not.toContain(github.accessToken);
    expectProblem(
      await t.request('POST', '/api/v1/connectors/github/connect', { key, body: { configuration: github } }),
      409,
      'already_connected',
    );

    const audit = await t.request('GET', '/api/v1/audit-events?resourceType=connector', { key });
    expect(audit.body.events[0]).toMatchObject({
      action: 'connector.connected',
      resourceId: 'github',
      detail: { fields: ['accessToken', 'organization'] },
    });
    expect(audit.text).not.toContain(github.accessToken);
    // At rest the configuration is sealed: neither the token nor the organization is readable in the row.
    const rows = await t.db.kysely.selectFrom('connector_connections').select('configuration').execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.configuration).toMatch(/^v1\.mk\./);
      expect(row.configuration).not.toContain(github.accessToken);
      expect(row.configuration).not.toContain('acme-corp');
    }
    // Another tenant sees github unconnected.
    expect((await t.request('GET', '/api/v1/connectors/github', { key: otherKey })).body.connected).toBe(false);
  });

  it('validates each connector’s configuration without echoing secrets', async () => {
    const bad = await t.request('POST', '/api/v1/connectors/stripe/connect', {
      key,
      body: { configuration: { secretKey: 'not-a-key-but-secret', colour: 'red' } },
    });
    expectProblem(bad, 400, 'validation_failed');
    expect(bad.body.errors).toEqual(
      expect.arrayContaining([
        { path: 'body.configuration.colour', message: 'is not a known field' },
        { path: 'body.configuration.secretKey', message: 'does not look like a valid value for this field' },
      ]),
    );
    expect(bad.text).not.toContain('not-a-key-but-secret');
    const missing = await t.request('POST', '/api/v1/connectors/jira/connect', {
      key,
      body: { configuration: { siteUrl: 'http://insecure.example', email: 'nope' } },
    });
    expectProblem(missing, 400, 'validation_failed');
    expect(missing.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      'body.configuration.apiToken',
      'body.configuration.email',
      'body.configuration.siteUrl',
    ]);
    const drive = await t.request('POST', '/api/v1/connectors/google-drive/connect', {
      key,
      body: { configuration: { serviceAccountJson: '{"type":"service_account"}' } },
    });
    expectProblem(drive, 400, 'validation_failed');
    const pg = await t.request('POST', '/api/v1/connectors/postgres/connect', {
      key,
      body: { configuration: { connectionString: 'postgres://u:p@db/x', readOnly: 'yes' } },
    });
    expectProblem(pg, 400, 'validation_failed');
    expect(pg.body.errors).toEqual([{ path: 'body.configuration.readOnly', message: 'must be true or false' }]);
    expectProblem(await t.request('POST', '/api/v1/connectors/github/connect', { key: otherKey, body: {} }), 400, 'validation_failed');
  });

  it('updates a connection field by field, and disconnects', async () => {
    const connected = await t.request('POST', '/api/v1/connectors/postgres/connect', {
      key,
      body: { configuration: { connectionString: 'postgres://reader:s3cret@db.internal:5432/app', schema: 'public', readOnly: true } },
    });
    expect(connected.status, connected.text).toBe(201);
    expect(connected.body.connection.configuration).toEqual({ connectionString: '********', schema: 'public', readOnly: true });
    const updated = await t.request('PATCH', '/api/v1/connectors/postgres/connection', {
      key,
      body: { configuration: { schema: null, readOnly: false } },
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.connection.configuration).toEqual({ connectionString: '********', readOnly: false });
    // The secret kept its value: opened with the server's master key, the sealed row still holds it.
    const stored = await t.db.kysely
      .selectFrom('connector_connections')
      .select(['configuration', 'tenant_id'])
      .where('connector_id', '=', 'postgres')
      .executeTakeFirstOrThrow();
    const { SecretBox } = await import('../../src/identity/secret-box.js');
    const { loadMasterKey } = await import('../../src/identity/master-key.js');
    const opened = new SecretBox(loadMasterKey(t.config), 'connector-configurations').open(
      stored.configuration,
      `${stored.tenant_id}/postgres`,
    );
    expect(JSON.parse(opened!).connectionString).toBe('postgres://reader:s3cret@db.internal:5432/app');
    expectProblem(
      await t.request('PATCH', '/api/v1/connectors/postgres/connection', { key, body: { configuration: { connectionString: null } } }),
      400,
      'validation_failed',
    );

    expect((await t.request('POST', '/api/v1/connectors/postgres/disconnect', { key })).status).toBe(204);
    expect((await t.request('GET', '/api/v1/connectors/postgres', { key })).body).toMatchObject({ connected: false, connection: null });
    expectProblem(await t.request('POST', '/api/v1/connectors/postgres/disconnect', { key }), 404, 'not_found');
    expectProblem(
      await t.request('PATCH', '/api/v1/connectors/postgres/connection', { key, body: { configuration: {} } }),
      404,
      'not_found',
    );
    // Another tenant cannot disconnect this tenant's github.
    expectProblem(await t.request('POST', '/api/v1/connectors/github/disconnect', { key: otherKey }), 404, 'not_found');
    expect((await t.request('GET', '/api/v1/connectors/github', { key })).body.connected).toBe(true);
  });

  it('needs settings:read to read and settings:write to change', async () => {
    const reader = await keyWith(['settings:read']);
    const skillsOnly = await keyWith(['skills:read', 'skills:write']);
    expect((await t.request('GET', '/api/v1/connectors', { key: reader })).status).toBe(200);
    expect((await t.request('GET', '/api/v1/connectors/requests', { key: reader })).status).toBe(200);
    expectProblem(await t.request('GET', '/api/v1/connectors', { key: skillsOnly }), 403, 'forbidden');
    expectProblem(
      await t.request('POST', '/api/v1/connectors/slack/connect', {
        key: reader,
        body: { configuration: { botToken: 'xoxb-1234567890-abc' } },
      }),
      403,
      'forbidden',
    );
    expectProblem(
      await t.request('PATCH', '/api/v1/connectors/github/connection', { key: reader, body: { configuration: {} } }),
      403,
      'forbidden',
    );
    expectProblem(await t.request('POST', '/api/v1/connectors/github/disconnect', { key: reader }), 403, 'forbidden');
  });
});
