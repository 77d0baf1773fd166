import { Agentry, type AgentryError } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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

/** The SDK's typed client on the server with `key`; no retries, so each call is one request. */
const api = (key: string) => new Agentry({ baseUrl: server.url, apiKey: key, maxRetries: 0 }).api;
/** A call's status, also when it failed (the SDK rejects with an AgentryError). */
const statusOf = (call: Promise<{ response: Response }>) =>
  call.then(
    ({ response }) => response.status,
    (err: AgentryError) => err.status,
  );

describe('the real CLI and the real server', () => {
  it('creates a tenant with the CLI while the server runs, and the key works over HTTP', async () => {
    const created = await cli(['tenants', 'create', 'Acme', '--json'], database.env);
    expect(created.code, created.stderr).toBe(0);
    const out = JSON.parse(created.stdout);
    expect(out).toEqual({ tenant: { id: expect.any(String), name: 'Acme' }, apiKey: expect.stringMatching(/^agk_/) });

    const res = await api(out.apiKey).POST('/api/v1/agents', { body: { name: 'Support', appId: 'support' } });
    expect(res.response.status).toBe(201);
    const agent = res.data!;
    const list = (await api(out.apiKey).GET('/api/v1/agents')).data!;
    expect(list.agents.map((a) => a.id)).toEqual([agent.id]);

    // keys create / list / revoke through the CLI, seen at once by the running server.
    const made = await cli(
      ['keys', 'create', '--tenant', out.tenant.id, '--permissions', 'agents:read', '--name', 'reader', '--json'],
      database.env,
    );
    expect(made.code, made.stderr).toBe(0);
    const reader = JSON.parse(made.stdout);
    expect(reader.apiKey).toMatchObject({ name: 'reader', permissions: ['agents:read'] });
    expect(await statusOf(api(reader.key).GET('/api/v1/agents'))).toBe(200);
    expect(await statusOf(api(reader.key).POST('/api/v1/agents', { body: { name: 'x', appId: 'y' } }))).toBe(403);

    const listed = JSON.parse((await cli(['keys', 'list', '--tenant', out.tenant.id, '--json'], database.env)).stdout);
    expect(listed.apiKeys.map((k: { name: string }) => k.name).sort()).toEqual(['initial admin key', 'reader']);
    expect(JSON.stringify(listed)).not.toContain(secretOf(reader.key));

    const revoked = await cli(['keys', 'revoke', reader.apiKey.id, '--tenant', out.tenant.id], database.env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(await statusOf(api(reader.key).GET('/api/v1/agents'))).toBe(401);
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
    const res = await api(apiKey).GET('/api/v1/agents', { headers: { 'x-request-id': 'trace-me-42' } });
    expect(res.response.status).toBe(200);
    // Until the request's last line is written.
    await vi.waitFor(() => expect(server.output()).toMatch(/"reqId":"trace-me-42".*"msg":"request completed"/), {
      timeout: 5_000,
      interval: 20,
    });
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
