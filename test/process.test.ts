import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretOf, startProcess, type TestDatabase, type TestProcess } from './helpers/app.js';
import { cli, type ServerProcess } from './helpers/process.js';

let database: TestDatabase;
let server: ServerProcess;
let proc: TestProcess;

beforeAll(async () => {
  proc = await startProcess();
  ({ database, server } = proc);
});
afterAll(() => proc?.close());

const api = (path: string, key: string, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, ...(init.body ? { 'content-type': 'application/json' } : {}), ...(init.headers ?? {}) },
  });

describe('the real CLI and the real server', () => {
  it('creates a tenant with the CLI while the server runs, and the key works over HTTP', async () => {
    const created = await cli(['tenants', 'create', 'Acme', '--json'], database.env);
    expect(created.code, created.stderr).toBe(0);
    const out = JSON.parse(created.stdout);
    expect(out).toEqual({ tenant: { id: expect.any(String), name: 'Acme' }, apiKey: expect.stringMatching(/^agk_/) });

    const res = await api('/api/v1/agents', out.apiKey, { method: 'POST', body: JSON.stringify({ name: 'Support', appId: 'support' }) });
    expect(res.status).toBe(201);
    const agent = (await res.json()) as { id: string };
    const list = (await (await api('/api/v1/agents', out.apiKey)).json()) as { agents: { id: string }[] };
    expect(list.agents.map((a: { id: string }) => a.id)).toEqual([agent.id]);

    // keys create / list / revoke through the CLI, seen at once by the running server.
    const made = await cli(
      ['keys', 'create', '--tenant', out.tenant.id, '--permissions', 'agents:read', '--name', 'reader', '--json'],
      database.env,
    );
    expect(made.code, made.stderr).toBe(0);
    const reader = JSON.parse(made.stdout);
    expect(reader.apiKey).toMatchObject({ name: 'reader', permissions: ['agents:read'] });
    expect((await api('/api/v1/agents', reader.key)).status).toBe(200);
    expect((await api('/api/v1/agents', reader.key, { method: 'POST', body: '{"name":"x","appId":"y"}' })).status).toBe(403);

    const listed = JSON.parse((await cli(['keys', 'list', '--tenant', out.tenant.id, '--json'], database.env)).stdout);
    expect(listed.apiKeys.map((k: { name: string }) => k.name).sort()).toEqual(['initial admin key', 'reader']);
    expect(JSON.stringify(listed)).not.toContain(secretOf(reader.key));

    const revoked = await cli(['keys', 'revoke', reader.apiKey.id, '--tenant', out.tenant.id], database.env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await api('/api/v1/agents', reader.key)).status).toBe(401);
  });

  it('explains CLI mistakes', async () => {
    const bad = await cli(
      ['keys', 'create', '--tenant', '01a00000-0000-7000-8000-000000000000', '--permissions', 'agents:read'],
      database.env,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('tenant not found');
    const perm = await cli(['tenants', 'create', 'X', '--json'], database.env);
    const tenantId = JSON.parse(perm.stdout).tenant.id;
    const unknown = await cli(['keys', 'create', '--tenant', tenantId, '--permissions', 'agents:fly'], database.env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown permission agents:fly');
    const nothing = await cli(['frobnicate'], database.env);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('unknown command');
  });

  it('logs requests with ids and never the credential', async () => {
    const { stdout } = await cli(['tenants', 'create', 'Logs', '--json'], database.env);
    const { apiKey } = JSON.parse(stdout);
    const res = await api('/api/v1/agents', apiKey, { headers: { 'x-request-id': 'trace-me-42' } });
    expect(res.status).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(server.output()).toContain('trace-me-42');
    expect(server.output()).not.toContain(secretOf(apiKey));
  });
});

describe('configuration', () => {
  it('stops at start with one clear line naming the variable', async () => {
    const { spawnSync } = await import('node:child_process');
    const { ROOT } = await import('./helpers/process.js');
    for (const [name, value] of [
      ['PORT', 'eighty'],
      ['DATABASE_URL', 'mysql://x'],
      ['LOG_LEVEL', 'loud'],
      ['DEFAULT_MODEL', 'gpt4'],
    ]) {
      const r = spawnSync(process.execPath, ['dist/main.js'], {
        cwd: ROOT,
        env: { ...process.env, ...database.env, [name]: value },
        encoding: 'utf8',
      });
      expect(r.status).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`invalid configuration: ${name}`);
    }
  });
});
