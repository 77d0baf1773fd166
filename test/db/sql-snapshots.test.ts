import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compileAll, recordCall, render, staleness, writeAll } from './sql-snapshots.js';

/**
 * docs/sql/<domain>.sql is every store query compiled on both dialects (docs/architecture.md,
 * "Reviewable SQL"). `npm run sql:check` runs this file: it fails when a store function has no
 * sample, or when docs/sql is not what the samples make now; `npm run sql:sync` (AGENTRY_WRITE_SQL=1)
 * rewrites docs/sql instead. The table-owner rule (scripts/table-owners.mjs) reads those files: its
 * self-test is here too, on SQL and source made to break it.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('docs/sql', () => {
  it('is the SQL every store function sends, as its sample calls it, on SQLite and PostgreSQL', async () => {
    const { files, problems } = await compileAll();
    expect(problems, 'every exported store function has a sample in its store.samples.ts (null if it runs no SQL)').toEqual([]);
    if (process.env.AGENTRY_WRITE_SQL === '1') writeAll(files);
    const stale = staleness(files);
    if (stale) expect.fail(`docs/sql is not the SQL the stores send now: run \`npm run sql:sync\` and review the change.\n${stale}`);
  });
});

describe('the table-owner rule (scripts/table-owners.mjs)', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'agentry-table-owners-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** The rule run on `src` and the compiled SQL in `sql`: its exit status and what it printed. */
  const rule = (src: string, sql: string) => {
    const r = spawnSync(process.execPath, ['scripts/table-owners.mjs', '--src', src, '--sql', sql], { cwd: ROOT, encoding: 'utf8' });
    return { status: r.status, out: r.stdout + r.stderr };
  };

  /** A tree of files under the scratch directory. */
  const tree = (name: string, files: Record<string, string>) => {
    const dir = path.join(scratch, name);
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    mkdirSync(dir, { recursive: true });
    return dir;
  };

  it('passes the source and the committed SQL', () => {
    const r = rule('src', 'docs/sql');
    expect(r.out).toContain('compiled statements each touch only their domain');
    expect(r.status).toBe(0);
  });

  it("refuses a domain's compiled query that touches another domain's table: written, joined, in a subquery or a CTE, on either dialect", async () => {
    const event = {
      id: 'e',
      tenant_id: 't',
      actor_type: 'agent',
      actor_id: null,
      action: 'a',
      resource_type: 'agent',
      resource_id: null,
      detail: '{}',
      created_at: 'now',
    };
    const identity = [
      // What identity/audit-buffer.ts did before tenancy's store took the write.
      await recordCall('identity/store.ts: insertAuditEvents', ({ db }) => db.insertInto('audit_events').values(event).execute()),
      await recordCall('identity/store.ts: keysOfTenant', ({ db }) =>
        db.selectFrom('identity_agent_keys as k').innerJoin('tenants as t', 't.id', 'k.tenant_id').select('k.kid').execute(),
      ),
      await recordCall('identity/store.ts: tokensOfRuns', ({ db }) =>
        db
          .selectFrom('identity_tokens')
          .select('jti')
          .where('agent_id', 'in', (eb) => eb.selectFrom('runs').select('agent_id'))
          .execute(),
      ),
      await recordCall('identity/store.ts: policiesOfAgents', ({ db }) =>
        db
          .with('named', (q) => q.selectFrom('agents').select('id'))
          .selectFrom('tbac_policies')
          .where('caller_agent_id', 'in', (eb) => eb.selectFrom('named').select('id'))
          .selectAll()
          .execute(),
      ),
      await recordCall('identity/store.ts: lockOnPostgres', ({ db, dialect }) =>
        dialect === 'postgres' ? db.selectFrom('tenants').select('id').forUpdate().execute() : undefined,
      ),
    ];
    // Its own tables, a CTE and a self-join: nothing to refuse.
    const agents = [
      await recordCall('agents/store.ts: newest', ({ db }) =>
        db
          .with('recent', (q) => q.selectFrom('agents').select('id').orderBy('id', 'desc').limit(10))
          .selectFrom('agents as a')
          .innerJoin('recent', 'recent.id', 'a.id')
          .selectAll('a')
          .execute(),
      ),
    ];
    const sql = tree('compiled', { 'identity.sql': render(identity), 'agents.sql': render(agents) });
    const r = rule(tree('empty-src', {}), sql);
    expect(r.status).toBe(1);
    const refused = r.out.split('\n').filter((line) => line.includes('error '));
    expect(refused.map((line) => line.replace(/^.*identity\.sql /, ''))).toEqual([
      '"identity/store.ts: insertAuditEvents" (sqlite and postgres) touches audit_events, owned by tenancy',
      '"identity/store.ts: keysOfTenant" (sqlite and postgres) touches tenants, owned by tenancy',
      '"identity/store.ts: tokensOfRuns" (sqlite and postgres) touches runs, owned by runs',
      '"identity/store.ts: policiesOfAgents" (sqlite and postgres) touches agents, owned by agents',
      '"identity/store.ts: lockOnPostgres" (postgres) touches tenants, owned by tenancy',
    ]);
  });

  it('refuses SQL built outside a store: a query naming a table, or raw SQL that names one or cannot be read', () => {
    const src = tree('src', {
      'identity/audit-buffer.ts': 'await db.executeQuery(CompiledQuery.raw(\'insert into "audit_events" values ($1)\', [1]));\n',
      'identity/service.ts': "await trx.selectFrom('audit_events').selectAll().execute();\n",
      'agents/service.ts': `await sql\`delete from audit_events where tenant_id = \${id}\`.execute(db);\nawait sql\`delete from runs\`.execute(db);\n`,
      // A statement naming no table is not a query of anyone's tables.
      'doctor/checks.ts': 'await sql`select 1`.execute(db);\nawait sql<{ now: Date }>`select clock_timestamp() as now`.execute(db);\n',
      // In a store, raw SQL is compiled with the rest (docs/sql), and checked there.
      'memory/store.ts': `await sql\`select pg_advisory_xact_lock(\${key})\`.execute(db);\n`,
    });
    const r = rule(src, tree('no-sql', { 'README.txt': '' }));
    expect(r.status).toBe(1);
    const refused = r.out
      .split('\n')
      .filter((line) => line.includes('error '))
      .map((line) => line.replace(src, '').trim());
    expect(refused).toEqual([
      "error raw-sql-outside-store: /agents/service.ts:1 builds raw SQL (with values, or not a whole statement): its domain's store does",
      "error raw-sql-outside-store: /agents/service.ts:2 names runs in raw SQL: its owner's store does",
      "error raw-sql-outside-store: /identity/audit-buffer.ts:1 runs SQL of its own (.executeQuery(): its domain's store does",
      "error raw-sql-outside-store: /identity/audit-buffer.ts:1 runs SQL of its own (CompiledQuery): its domain's store does",
      'error table-owned-elsewhere: /identity/service.ts:1 names audit_events, owned by src/tenancy/store.ts',
    ]);
  });
});
