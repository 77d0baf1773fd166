import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Agentry } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/app.js';
import { cli, startServer } from '../helpers/process.js';
import { svidBody } from './helpers.js';

/**
 * A database restored without its master key (or started with another one) holds sealed secrets
 * nothing can open. The server used to start and make a new key silently; signing then answered 500.
 * Now it refuses to start and says what to restore; MASTER_KEY_RESET=true re-keys on purpose (the
 * unreadable platform key revoked, a new one signs). Real processes on the built server, both databases.
 */
describe('a database started without the master key it was sealed with', () => {
  let database: TestDatabase;
  let keyFile: string;
  let original: string;
  let apiKey: string;
  let agentId: string;

  /** The SDK's typed client for the server at `url` (a failed call rejects with an AgentryError). */
  const api = (url: string) => new Agentry({ baseUrl: url, apiKey }).api;
  const svid = (url: string) =>
    api(url).POST('/api/v1/identity/agents/{agentId}/svid', { params: { path: { agentId } }, body: svidBody('https://api.example') });

  beforeAll(async () => {
    database = await createTestDatabase();
    keyFile = path.join(database.env.DATA_DIR, 'master.key');
    const created = await cli(['tenants', 'create', 'acme', '--json'], database.env);
    expect(created.code, created.stderr).toBe(0);
    apiKey = JSON.parse(created.stdout).apiKey;
    const server = await startServer(database.env);
    try {
      const agent = await api(server.url).POST('/api/v1/agents', { body: { name: 'signer', appId: 'app', model: 'builtin/echo' } });
      expect(agent.response.status).toBe(201);
      agentId = agent.data!.id;
      // Seals a platform signing key and the agent's key under the master key.
      expect((await svid(server.url)).response.status).toBe(200);
    } finally {
      await server.stop();
    }
    original = fs.readFileSync(keyFile, 'utf8');
  });
  afterAll(() => database?.drop());

  it('refuses to start when master.key is missing, naming the file to restore', async () => {
    fs.rmSync(keyFile);
    const start = startServer(database.env);
    await expect(start).rejects.toThrow(/server exited early \(1\)/);
    const message = String(await start.catch((err: Error) => err.message));
    expect(message).toContain('there is no master key');
    expect(message).toContain(keyFile);
    expect(message).toContain('MASTER_KEY_RESET=true');
    // Nothing was made in its place.
    expect(fs.existsSync(keyFile)).toBe(false);
  });

  it('refuses to start with another key (MASTER_KEY or the file)', async () => {
    const other = randomBytes(32).toString('base64');
    await expect(startServer({ ...database.env, MASTER_KEY: other })).rejects.toThrow(
      /MASTER_KEY does not open the secrets this database holds/,
    );
    fs.writeFileSync(keyFile, `${other}\n`, { mode: 0o600 });
    await expect(startServer(database.env)).rejects.toThrow(/master\.key does not open the secrets this database holds/);
  });

  it('starts and signs again once the key is restored', async () => {
    fs.writeFileSync(keyFile, original, { mode: 0o600 });
    const server = await startServer(database.env);
    try {
      expect((await svid(server.url)).response.status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  it('with MASTER_KEY_RESET=true, starts with a new key on purpose: the old platform key is revoked and a new one signs', async () => {
    const kidsBefore = await platformKids();
    const server = await startServer({ ...database.env, MASTER_KEY: randomBytes(32).toString('base64'), MASTER_KEY_RESET: 'true' });
    try {
      expect(server.output()).toContain('MASTER_KEY_RESET');
      // The agent's own key was sealed under the old key too: rotated, it signs again.
      const rotated = await api(server.url).POST('/api/v1/identity/agents/{agentId}/keys/rotate', { params: { path: { agentId } } });
      expect(rotated.response.status).toBe(201);
      expect((await svid(server.url)).response.status).toBe(200);
    } finally {
      await server.stop();
    }
    const after = await platformKids();
    expect(after.filter((k) => k.status === 'revoked').map((k) => k.kid)).toEqual(kidsBefore.map((k) => k.kid));
    expect(after.some((k) => k.status === 'active')).toBe(true);
  });

  async function platformKids(): Promise<{ kid: string; status: string }[]> {
    const res = await cli(['identity', 'platform-keys', '--json'], { ...database.env, MASTER_KEY: randomBytes(32).toString('base64') });
    expect(res.code, res.stderr).toBe(0);
    return JSON.parse(res.stdout).keys;
  }
});
