import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ChangeFeed, ReadCache } from '../../src/db/changes.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { dialect, expectProblem, startApp, type TestApp } from '../helpers/app.js';

/**
 * API keys, agents, agent budgets and the skills a run announces are served from memory (db/changes.ts). Whatever writes them, from this
 * process or another one on the same database, the next reads must show the change: SQLite through
 * data_version (within 1 ms), PostgreSQL through the change triggers' NOTIFY (asynchronous, so
 * these tests wait for it, up to 2 s).
 */
describe('cached reads follow writes from anywhere', () => {
  let t: TestApp;
  let other: Db; // a second connection, like the CLI or another replica
  let tenant: { id: string; key: string };
  let agentId: string;

  /**
   * `check` passes at once on SQLite (after 2 ms: data_version is read at most once a millisecond),
   * within 2 s on PostgreSQL.
   */
  async function eventually(check: () => Promise<void>) {
    await new Promise((r) => setTimeout(r, 2));
    if (dialect === 'sqlite') return check();
    await vi.waitFor(check, { timeout: 2000, interval: 2 });
  }
  const getAgent = (key: string) => t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: agentId } } });
  const listAgents = () => t.api(tenant.key).GET('/api/v1/agents', { params: { query: { limit: 5 } } });

  beforeAll(async () => {
    t = await startApp();
    other = openDatabase({ databaseUrl: t.config.databaseUrl, dataDir: t.config.dataDir });
    tenant = await t.tenant();
    agentId = (await t.agent(tenant.key, { name: 'before', appId: 'a' })).id;
  });
  afterAll(async () => {
    await other?.close();
    await t?.close();
  });

  it('an agent changed by another connection is shown changed', async () => {
    const first = await getAgent(tenant.key);
    expect(first.data!.name).toBe('before');
    await other.kysely.updateTable('agents').set({ name: 'renamed elsewhere' }).where('id', '=', agentId).execute();
    await eventually(async () => {
      const res = await getAgent(tenant.key);
      expect(res.data!.name).toBe('renamed elsewhere');
    });
  });

  it('a list page shows an agent created by another process', async () => {
    const before = (await listAgents()).data!;
    const created = (
      await t.services.agents.create(
        { tenantId: tenant.id, actor: { type: 'cli', id: null }, permissions: new Set(), rateLimitPerMinute: null },
        { name: 'own write', appId: 'a' },
      )
    ).id;
    // Own writes: at once, on both dialects.
    const own = (await listAgents()).data!;
    expect(own.total).toBe(before.total + 1);
    expect(own.agents[0].id).toBe(created);
    const row = await other.kysely.selectFrom('agents').selectAll().where('id', '=', created).executeTakeFirstOrThrow();
    const foreignId = '01900000-0000-7000-8000-00000000f00d';
    await other.kysely
      .insertInto('agents')
      .values({ ...row, id: foreignId, name: 'foreign write' })
      .execute();
    await eventually(async () => {
      const res = (await listAgents()).data!;
      expect(res.total).toBe(before.total + 2);
      expect(res.agents.map((a) => a.name)).toContain('foreign write');
    });
  });

  it('a key revoked by another connection is refused', async () => {
    const doomed = await t.services.tenancy.createKey(
      tenant.id,
      { name: 'doomed', permissions: ['agents:read'] },
      { type: 'cli', id: null },
    );
    expect((await getAgent(doomed.secret)).response.status).toBe(200);
    await other.kysely.updateTable('api_keys').set({ revoked_at: new Date().toISOString() }).where('id', '=', doomed.view.id).execute();
    await eventually(async () => {
      expectProblem(await getAgent(doomed.secret), 401, 'invalid_credentials');
    });
  });

  it('the skills a run announces follow assignments and skills changed by another connection', async () => {
    const briefs = () => t.services.skills.usableSkillBriefs(tenant.id, agentId);
    expect(await briefs()).toEqual([]);
    const created = await t.api(tenant.key).POST('/api/skills', {
      body: { name: 'refunds', description: 'How refunds work', instructions: 'Refund within 30 days.' },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    const skill = created.data!;
    const assigned = await t.api(tenant.key).POST('/api/skills/{id}/assign', { params: { path: { id: skill.id } }, body: { agentId } });
    expect(assigned.response.status, JSON.stringify(assigned.error)).toBe(201);
    // Own writes: at once, on both dialects.
    expect(await briefs()).toEqual([{ id: skill.id, name: 'refunds', description: 'How refunds work', version: null }]);
    await other.kysely.updateTable('skills').set({ description: 'Refunds, changed elsewhere' }).where('id', '=', skill.id).execute();
    await eventually(async () => {
      expect(await briefs()).toEqual([{ id: skill.id, name: 'refunds', description: 'Refunds, changed elsewhere', version: null }]);
    });
    await other.kysely.updateTable('skill_assignments').set({ enabled: 0 }).where('skill_id', '=', skill.id).execute();
    await eventually(async () => {
      expect(await briefs()).toEqual([]);
    });
  });

  it.skipIf(dialect !== 'postgres')('serves nothing from memory while change notifications cannot arrive', async () => {
    expect(t.db.changes.stamp('agents')).not.toBeNull();
    const admin = new pg.Client({ connectionString: t.config.databaseUrl });
    await admin.connect();
    try {
      // Kill the signal bus's LISTEN connection; it reconnects after about a second.
      const killed = await admin.query(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'LISTEN%'`,
      );
      expect(killed.rowCount).toBeGreaterThan(0);
      const deadline = Date.now() + 2000;
      await vi.waitFor(() => expect(t.db.changes.stamp('agents')).toBeNull(), { timeout: 2000, interval: 5 });
      // Written while nobody listens: the notification is lost, yet the read is right (uncached).
      await admin.query(`update agents set name = 'while deaf' where id = $1`, [agentId]);
      expect((await getAgent(tenant.key)).data!.name).toBe('while deaf');
      await vi.waitFor(() => expect(t.db.changes.stamp('agents')).not.toBeNull(), { timeout: deadline + 5000 - Date.now(), interval: 20 });
      expect((await getAgent(tenant.key)).data!.name).toBe('while deaf');
    } finally {
      await admin.end();
    }
  });
});

describe('ReadCache', () => {
  it('does not keep a value read while its table was written', async () => {
    const feed = new ChangeFeed();
    const cache = new ReadCache<{ v: number }>(feed, 'agents', { max: 10 });
    let loads = 0;
    // The write lands while the read is in flight: the value read may predate it.
    await cache.get('k', async () => {
      loads++;
      feed.changed('agents');
      return { v: 1 };
    });
    await cache.get('k', async () => ({ v: ++loads }));
    expect(loads).toBe(2);
    // A quiet read is kept, and a write to another table does not disturb it.
    feed.changed('api_keys');
    expect(await cache.get('k', async () => ({ v: ++loads }))).toEqual({ v: 2 });
    feed.changed('agents');
    expect(await cache.get('k', async () => ({ v: ++loads }))).toEqual({ v: 3 });
  });

  it('hands out frozen values and never caches misses', async () => {
    const cache = new ReadCache<{ list: number[] }>(new ChangeFeed(), 't', { max: 10 });
    const value = await cache.get('k', async () => ({ list: [1] }));
    expect(Object.isFrozen(value) && Object.isFrozen(value!.list)).toBe(true);
    let misses = 0;
    const miss = async () => {
      misses++;
      return undefined;
    };
    await cache.get('missing', miss);
    await cache.get('missing', miss);
    expect(misses).toBe(2);
  });

  it('is off while the feed is not live', async () => {
    const feed = new ChangeFeed(null, false);
    const cache = new ReadCache<{ v: number }>(feed, 't', { max: 10 });
    let loads = 0;
    await cache.get('k', async () => ({ v: ++loads }));
    await cache.get('k', async () => ({ v: ++loads }));
    expect(loads).toBe(2);
    feed.setLive(true);
    await cache.get('k', async () => ({ v: ++loads }));
    await cache.get('k', async () => ({ v: ++loads }));
    expect(loads).toBe(3);
  });
});
