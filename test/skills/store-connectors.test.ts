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
const acquire = (k: string, storeId: string) => t.api(k).POST('/api/skills/store/{id}/acquire', { params: { path: { id: storeId } } });
const connector = (k: string, id: string) => t.api(k).GET('/api/v1/connectors/{id}', { params: { path: { id } } });
const connect = (k: string, id: string, configuration: Record<string, unknown>) =>
  t.api(k).POST('/api/v1/connectors/{id}/connect', { params: { path: { id } }, body: { configuration } });
const updateConnection = (k: string, id: string, configuration: Record<string, unknown>) =>
  t.api(k).PATCH('/api/v1/connectors/{id}/connection', { params: { path: { id } }, body: { configuration } });
const disconnect = (k: string, id: string) => t.api(k).POST('/api/v1/connectors/{id}/disconnect', { params: { path: { id } } });

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
    const { data, response } = await t.api(key).GET('/api/skills/store');
    expect(response.status).toBe(200);
    expect(data!.total).toBe(data!.skills.length);
    const review = data!.skills.find((s) => s.id === 'code-review');
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
    const finance = await t.api(key).GET('/api/skills/store', { params: { query: { category: 'finance' } } });
    expect(finance.data!.skills.map((s) => s.id)).toEqual(['invoice-reconciliation']);
    const one = await t.api(key).GET('/api/skills/store/{id}', { params: { path: { id: 'incident-response' } } });
    expect(one.response.status).toBe(200);
    expect(one.data!.instructions).toContain('Mitigate first');
    expectProblem(await t.api(key).GET('/api/skills/store/{id}', { params: { path: { id: 'nothing-here' } } }), 404, 'not_found');
  });

  it('acquires a store skill as a tenant skill (source store), once', async () => {
    const res = await acquire(key, 'sql-analysis');
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(res.data).toMatchObject({
      name: 'sql-analysis',
      source: 'store',
      storeId: 'sql-analysis',
      status: 'active',
      category: 'engineering',
      metadata: { version: '1.0', dialect: 'postgresql' },
      references: [{ name: 'pitfalls.md' }, { name: 'query-patterns.md' }],
    });
    expectProblem(await acquire(key, 'sql-analysis'), 409, 'already_acquired');
    expectProblem(await acquire(key, 'unknown'), 404, 'not_found');

    const store = await t.api(key).GET('/api/skills/store');
    expect(store.data!.skills.find((s) => s.id === 'sql-analysis')).toMatchObject({ acquired: true, skillId: res.data!.id });
    // Per tenant: the other tenant has not acquired it.
    const theirs = await t.api(otherKey).GET('/api/skills/store');
    expect(theirs.data!.skills.find((s) => s.id === 'sql-analysis')).toMatchObject({ acquired: false, skillId: null });
    const fromStore = await t.api(key).GET('/api/skills', { params: { query: { source: 'store' } } });
    expect(fromStore.data!.skills.map((s) => s.name)).toEqual(['sql-analysis']);
    // Still 409 while archived: restoring it is the way back.
    await t.api(key).DELETE('/api/skills/{id}', { params: { path: { id: res.data!.id } } });
    expectProblem(await acquire(key, 'sql-analysis'), 409, 'already_acquired');
  });

  it('keeps store skills read-only except for their status', async () => {
    const params = { path: { id: (await acquire(key, 'sales-discovery')).data!.id } };
    expectProblem(await t.api(key).PATCH('/api/skills/{id}', { params, body: { instructions: 'mine now' } }), 409, 'store_skill_read_only');
    const archived = await t.api(key).PATCH('/api/skills/{id}', { params, body: { status: 'archived' } });
    expect(archived.data!.status).toBe('archived');
  });

  it('refuses to acquire a store skill whose name a custom skill already uses', async () => {
    await createSkill(t, otherKey, { name: 'support-triage' });
    expectProblem(await acquire(otherKey, 'support-triage'), 409, 'skill_name_taken');
  });
});

describe('connectors API', () => {
  const github = { accessToken: `ghp_${'x'.repeat(36)}`, organization: 'acme-corp' };

  it('lists the catalog with connection state and the fields each needs', async () => {
    const { data, response } = await t.api(key).GET('/api/v1/connectors');
    expect(response.status).toBe(200);
    expect(data!.total).toBe(8);
    expect(data!.connectors.map((c) => c.id)).toEqual([
      'github',
      'jira',
      'slack',
      'salesforce',
      'zendesk',
      'stripe',
      'google-drive',
      'postgres',
    ]);
    const stripe = data!.connectors.find((c) => c.id === 'stripe');
    expect(stripe).toMatchObject({
      name: 'Stripe',
      category: 'finance',
      connected: false,
      connection: null,
      suggestedSkills: ['invoice-reconciliation'],
      fields: expect.arrayContaining([expect.objectContaining({ name: 'secretKey', type: 'secret', secret: true, required: true })]),
    });
    const sales = await t.api(key).GET('/api/v1/connectors', { params: { query: { category: 'sales' } } });
    expect(sales.data!.connectors.map((c) => c.id)).toEqual(['salesforce']);
    expectProblem(await t.api(key).GET('/api/v1/connectors/{id}', { params: { path: { id: 'myspace' } } }), 404, 'not_found');
  });

  it('connects with a validated configuration and never returns secrets', async () => {
    const res = await connect(key, 'github', github);
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(res.data).toMatchObject({
      id: 'github',
      connected: true,
      connection: { configuration: { accessToken: '********', organization: 'acme-corp' }, connectedBy: expect.any(String) },
    });
    expect(JSON.stringify(res.data)).not.toContain(github.accessToken);
    const got = await connector(key, 'github');
    expect(got.data!.connection!.configuration).toEqual({ accessToken: '********', organization: 'acme-corp' });
    const list = await t.api(key).GET('/api/v1/connectors', { params: { query: { connected: true } } });
    expect(list.data!.connectors.map((c) => c.id)).toEqual(['github']);
    expect(JSON.stringify(list.data)).not.toContain(github.accessToken);
    expectProblem(await connect(key, 'github', github), 409, 'already_connected');

    const audit = await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceType: 'connector' } } });
    expect(audit.data!.events[0]).toMatchObject({
      action: 'connector.connected',
      resourceId: 'github',
      detail: { fields: ['accessToken', 'organization'] },
    });
    expect(JSON.stringify(audit.data)).not.toContain(github.accessToken);
    // At rest the configuration is sealed: neither the token nor the organization is readable in the row.
    const rows = await t.db.kysely.selectFrom('connector_connections').select('configuration').execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.configuration).toMatch(/^v1\.mk\./);
      expect(row.configuration).not.toContain(github.accessToken);
      expect(row.configuration).not.toContain('acme-corp');
    }
    // Another tenant sees github unconnected.
    expect((await connector(otherKey, 'github')).data!.connected).toBe(false);
  });

  it('validates each connector’s configuration without echoing secrets', async () => {
    const bad = await connect(key, 'stripe', { secretKey: 'not-a-key-but-secret', colour: 'red' });
    expectProblem(bad, 400, 'validation_failed');
    expect(bad.error!.errors).toEqual(
      expect.arrayContaining([
        { path: 'body.configuration.colour', message: 'is not a known field' },
        { path: 'body.configuration.secretKey', message: 'does not look like a valid value for this field' },
      ]),
    );
    expect(JSON.stringify(bad.error)).not.toContain('not-a-key-but-secret');
    const missing = await connect(key, 'jira', { siteUrl: 'http://insecure.example', email: 'nope' });
    expectProblem(missing, 400, 'validation_failed');
    expect(missing.error!.errors!.map((e) => e.path).sort()).toEqual([
      'body.configuration.apiToken',
      'body.configuration.email',
      'body.configuration.siteUrl',
    ]);
    const drive = await connect(key, 'google-drive', { serviceAccountJson: '{"type":"service_account"}' });
    expectProblem(drive, 400, 'validation_failed');
    const pg = await connect(key, 'postgres', { connectionString: 'postgres://u:p@db/x', readOnly: 'yes' });
    expectProblem(pg, 400, 'validation_failed');
    expect(pg.error!.errors).toEqual([{ path: 'body.configuration.readOnly', message: 'must be true or false' }]);
    // No configuration at all, which the types require: raw.
    expectProblem(await t.raw('POST', '/api/v1/connectors/github/connect', { key: otherKey, body: {} }), 400, 'validation_failed');
  });

  it('updates a connection field by field, and disconnects', async () => {
    const connected = await connect(key, 'postgres', {
      connectionString: 'postgres://reader:s3cret@db.internal:5432/app',
      schema: 'public',
      readOnly: true,
    });
    expect(connected.response.status, JSON.stringify(connected.error)).toBe(201);
    expect(connected.data!.connection!.configuration).toEqual({ connectionString: '********', schema: 'public', readOnly: true });
    const updated = await updateConnection(key, 'postgres', { schema: null, readOnly: false });
    expect(updated.response.status, JSON.stringify(updated.error)).toBe(200);
    expect(updated.data!.connection!.configuration).toEqual({ connectionString: '********', readOnly: false });
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
    expectProblem(await updateConnection(key, 'postgres', { connectionString: null }), 400, 'validation_failed');

    expect((await disconnect(key, 'postgres')).response.status).toBe(204);
    expect((await connector(key, 'postgres')).data).toMatchObject({ connected: false, connection: null });
    expectProblem(await disconnect(key, 'postgres'), 404, 'not_found');
    expectProblem(await updateConnection(key, 'postgres', {}), 404, 'not_found');
    // Another tenant cannot disconnect this tenant's github.
    expectProblem(await disconnect(otherKey, 'github'), 404, 'not_found');
    expect((await connector(key, 'github')).data!.connected).toBe(true);
  });

  it('needs settings:read to read and settings:write to change', async () => {
    const reader = await keyWith(['settings:read']);
    const skillsOnly = await keyWith(['skills:read', 'skills:write']);
    expect((await t.api(reader).GET('/api/v1/connectors')).response.status).toBe(200);
    expect((await t.api(reader).GET('/api/v1/connectors/requests')).response.status).toBe(200);
    expectProblem(await t.api(skillsOnly).GET('/api/v1/connectors'), 403, 'forbidden');
    expectProblem(await connect(reader, 'slack', { botToken: 'xoxb-1234567890-abc' }), 403, 'forbidden');
    expectProblem(await updateConnection(reader, 'github', {}), 403, 'forbidden');
    expectProblem(await disconnect(reader, 'github'), 403, 'forbidden');
  });
});
