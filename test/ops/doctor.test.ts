import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { createTestDatabase, dialect, type TestDatabase } from '../helpers/app.js';
import { type FakeProvider, startFakeProvider } from '../helpers/fake-provider.js';
import { cli, freePort } from '../helpers/process.js';

/**
 * `agentry doctor` as a real process (dist/cli.js) against good and broken installations: an
 * unmigrated database, the wrong master key, a provider on a closed port, a configuration that does
 * not parse. Each failure names its check and a fix, and the exit status is 1.
 */

interface Check {
  name: string;
  status: 'pass' | 'fail' | 'skip';
  detail: string;
  fix?: string;
}

let database: TestDatabase;
let provider: FakeProvider;
const masterKey = randomBytes(32).toString('base64');

beforeAll(async () => {
  database = await createTestDatabase();
  provider = await startFakeProvider();
});
afterAll(async () => {
  await provider?.close();
  await database?.drop();
});

async function doctor(env: Record<string, string> = {}) {
  const run = await cli(['doctor', '--json'], { ...database.env, MASTER_KEY: masterKey, ...env });
  const report = JSON.parse(run.stdout) as { ok: boolean; checks: Check[] };
  const byName = Object.fromEntries(report.checks.map((c) => [c.name, c]));
  return { code: run.code, report, byName, stderr: run.stderr };
}

describe('agentry doctor', () => {
  it('fails an unmigrated database and says to migrate', async () => {
    // The database exists (opened once) but holds no table.
    const db = openDatabase({ databaseUrl: database.env.DATABASE_URL || undefined, dataDir: database.env.DATA_DIR });
    await db.close();
    const { code, report, byName } = await doctor();
    expect(code).toBe(1);
    expect(report.ok).toBe(false);
    expect(byName.configuration.status).toBe('pass');
    expect(byName['database reachable'].status).toBe('pass');
    expect(byName['database migrated']).toMatchObject({ status: 'fail', fix: 'run `agentry migrate`' });
    expect(byName['database migrated'].detail).toMatch(/migrations pending: 0001_foundation, /);
    expect(byName['master key'].status).toBe('skip');
  });

  it('passes every check of a migrated installation whose provider answers', async () => {
    expect((await cli(['migrate'], { ...database.env, MASTER_KEY: masterKey })).code).toBe(0);
    // A sealed platform key for the master key check to open.
    const rotated = await cli(['identity', 'rotate-platform-key', '--activate-in', '0'], { ...database.env, MASTER_KEY: masterKey });
    expect(rotated.code, rotated.stderr).toBe(0);
    provider.script({ json: { object: 'list', data: [{ id: 'local-model', object: 'model' }] } });

    const { code, report, byName } = await doctor({ OPENAI_COMPATIBLE_BASE_URL: provider.baseUrl, OPENAI_COMPATIBLE_API_KEY: 'sk-test' });
    expect(report.checks.filter((c) => c.status === 'fail')).toEqual([]);
    expect(code).toBe(0);
    expect(report.checks.map((c) => c.name)).toEqual([
      'configuration',
      'data folder',
      'free disk',
      'database reachable',
      'database migrated',
      'clock',
      'master key',
      'platform signing keys',
      'provider openai-compatible',
      'model breakers',
      'code execution',
    ]);
    expect(byName['code execution'].detail).toMatch(
      /^available: network and PID namespaces, Node's permission model, as .+; 1 warm process\(es\) per language$/,
    );
    expect(byName['master key'].detail).toMatch(/^MASTER_KEY opens the stored platform keys \(1\)$/);
    expect(byName['platform signing keys'].detail).toMatch(/ \(#2\) signs; 0 pending, 2 in all$/);
    expect(byName['provider openai-compatible'].detail).toMatch(/answered 200/);
    // The models list, asked with the provider's key.
    expect(provider.requests.map((r) => [r.method, r.url, r.headers.authorization])).toEqual([['GET', '/v1/models', 'Bearer sk-test']]);
  });

  it('fails code execution where the sandbox cannot isolate, says why, and skips it when it is off', async () => {
    // Without unshare and prlimit on the PATH there is no isolation: no code runs, and doctor says so.
    const { code, byName } = await doctor({ PATH: '/nonexistent' });
    expect(code).toBe(1);
    expect(byName['code execution']).toMatchObject({ status: 'fail', detail: 'prlimit (util-linux) is not installed' });
    expect(byName['code execution'].fix).toMatch(/CODE_EXECUTION=off/);
    const off = await doctor({ PATH: '/nonexistent', CODE_EXECUTION: 'off' });
    expect(off.byName['code execution']).toMatchObject({ status: 'skip', detail: 'CODE_EXECUTION=off: agents run no code' });
  });

  it('fails the wrong master key', async () => {
    const { code, byName } = await doctor({ MASTER_KEY: randomBytes(32).toString('base64') });
    expect(code).toBe(1);
    expect(byName['master key'].status).toBe('fail');
    expect(byName['master key'].detail).toMatch(/does not open the stored platform key/);
    expect(byName['master key'].fix).toMatch(/MASTER_KEY/);
    expect(byName['platform signing keys'].status).toBe('fail');
  });

  it('fails a provider that cannot be reached', async () => {
    const port = await freePort(); // nothing listens there
    const { code, byName } = await doctor({ OPENAI_COMPATIBLE_BASE_URL: `http://127.0.0.1:${port}/v1` });
    expect(code).toBe(1);
    expect(byName['provider openai-compatible']).toMatchObject({ status: 'fail' });
    expect(byName['provider openai-compatible'].detail).toMatch(/is not reachable: ECONNREFUSED/);
    expect(byName['provider openai-compatible'].fix).toMatch(/OPENAI_COMPATIBLE_BASE_URL/);
    // Everything else still passes.
    expect(byName['master key'].status).toBe('pass');
  });

  it('fails a provider that refuses the key', async () => {
    provider.script({ status: 401, json: { error: { message: 'bad key' } } });
    const { code, byName } = await doctor({ OPENAI_COMPATIBLE_BASE_URL: provider.baseUrl, OPENAI_COMPATIBLE_API_KEY: 'sk-wrong' });
    expect(code).toBe(1);
    expect(byName['provider openai-compatible']).toMatchObject({ status: 'fail', fix: 'check OPENAI_COMPATIBLE_API_KEY' });
  });

  it('fails a provider that answers 200 with a web page instead of its models list', async () => {
    provider.script({ text: '<!doctype html><html><body>Sign in to the proxy</body></html>' });
    const { code, byName } = await doctor({ OPENAI_COMPATIBLE_BASE_URL: provider.baseUrl });
    expect(code).toBe(1);
    expect(byName['provider openai-compatible']).toMatchObject({
      status: 'fail',
      fix: expect.stringMatching(/^check OPENAI_COMPATIBLE_BASE_URL/),
    });
    expect(byName['provider openai-compatible'].detail).toMatch(/answered 200 with text\/html; charset=utf-8, not a models list/);
    // JSON that is not a models list fails too.
    provider.script({ json: { status: 'ok' } });
    const json = await doctor({ OPENAI_COMPATIBLE_BASE_URL: provider.baseUrl });
    expect(json.byName['provider openai-compatible']).toMatchObject({ status: 'fail' });
    expect(json.byName['provider openai-compatible'].detail).toMatch(/with application\/json, not a models list/);
  });

  it('fails a data folder others may read (on PostgreSQL: while it holds the master key)', async () => {
    fs.chmodSync(database.env.DATA_DIR, 0o755);
    try {
      // Without MASTER_KEY the folder holds DATA_DIR/master.key, on either database.
      const { code, byName } = await doctor({ MASTER_KEY: '' });
      expect(code).toBe(1);
      expect(byName['data folder']).toMatchObject({ status: 'fail', fix: `chmod 700 ${database.env.DATA_DIR}` });
      expect(byName['data folder'].detail).toMatch(/mode 755/);
    } finally {
      fs.chmodSync(database.env.DATA_DIR, 0o700);
    }
  });

  it.runIf(dialect === 'postgres')('on PostgreSQL with MASTER_KEY, leaves the unused data folder alone', async () => {
    fs.chmodSync(database.env.DATA_DIR, 0o755);
    try {
      const { byName } = await doctor();
      expect(byName['data folder']).toMatchObject({
        status: 'skip',
        detail: expect.stringMatching(/^unused: PostgreSQL keeps the data and MASTER_KEY is set/),
      });
    } finally {
      fs.chmodSync(database.env.DATA_DIR, 0o700);
    }
  });

  it('fails a configuration that does not parse, and checks nothing past it', async () => {
    const { code, report } = await doctor({ PORT: 'eighty' });
    expect(code).toBe(1);
    expect(report.checks).toHaveLength(1);
    expect(report.checks[0]).toMatchObject({ name: 'configuration', status: 'fail' });
    expect(report.checks[0].detail).toMatch(/PORT/);
  });

  it('prints a report a person reads, with the fix under each failure', async () => {
    const port = await freePort();
    const run = await cli(['doctor'], {
      ...database.env,
      MASTER_KEY: masterKey,
      OPENAI_COMPATIBLE_BASE_URL: `http://127.0.0.1:${port}/v1`,
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^PASS {2}configuration: parses/m);
    expect(run.stdout).toMatch(/^FAIL {2}provider openai-compatible: .*\n {6}fix: check OPENAI_COMPATIBLE_BASE_URL/m);
    expect(run.stdout).toMatch(/1 check failed\n$/);
  });
});
