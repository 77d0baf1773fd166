import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, secretOf, type TestDatabase } from '../helpers/app.js';
import { cli, startServer, type ServerProcess } from '../helpers/process.js';

let database: TestDatabase;
let server: ServerProcess;

beforeAll(async () => {
  database = await createTestDatabase();
  server = await startServer({ ...database.env, LOG_LEVEL: 'trace' });
});
afterAll(async () => {
  await server?.stop();
  await database.drop();
});

describe('logs of a full session at LOG_LEVEL=trace', () => {
  it('never contain an API key, a key secret or a tool credential', async () => {
    const created = JSON.parse((await cli(['tenants', 'create', 'secrets', '--json'], database.env)).stdout);
    const admin: string = created.apiKey;
    const call = async (path: string, key: string, body?: unknown, method?: string) => {
      const res = await fetch(`${server.url}${path}`, {
        method: method ?? (body === undefined ? 'GET' : 'POST'),
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text.startsWith('id:') ? '{}' : text) : undefined, text };
    };
    const made = await call('/api/v1/api-keys', admin, { name: 'worker', permissions: ['agents:read', 'agents:write'] });
    expect(made.status).toBe(201);
    const worker: string = made.body.key;
    const toolSecret = 'mcp-token-Zq8vN3xY7wK2pL5';
    const agent = await call('/api/v1/agents', worker, {
      name: 's',
      appId: 'x',
      tools: [{ type: 'mcp', url: 'http://127.0.0.1:9/mcp', headers: { authorization: `Bearer ${toolSecret}` } }],
    });
    expect(agent.status).toBe(201);
    await call(`/api/v1/agents/${agent.body.id}/execute`, worker, { message: 'hello' });
    await call(`/api/v1/agents/${agent.body.id}/execute`, worker, { message: '/fail on purpose' });
    // Wrong secrets presented: a forged key for a real id, and garbage.
    const forged = worker.slice(0, 37) + 'A'.repeat(43);
    expect((await call('/api/v1/agents', forged)).status).toBe(401);
    expect((await call('/api/v1/agents', 'not-a-key-Xy9Wv8Ut7')).status).toBe(401);
    // Identity: an external agent's new private key is handed out once; SVIDs and access tokens are credentials.
    const external = await call('/api/v1/agents', admin, { name: 'ext', appId: 'x', hosting: 'external' });
    const rotated = await call(`/api/v1/identity/agents/${external.body.id}/keys/rotate`, admin, {});
    expect(rotated.status).toBe(201);
    const privateD: string = rotated.body.privateJwk.d;
    expect(privateD.length).toBeGreaterThan(20);
    const svid = await call(`/api/v1/identity/agents/${agent.body.id}/svid`, admin, { audience: 'http://127.0.0.1' });
    expect(svid.status).toBe(200);
    const masterKey = (await import('node:fs')).readFileSync(`${database.env.DATA_DIR}/master.key`, 'utf8').trim();
    await call(`/api/v1/api-keys/${made.body.apiKey.id}`, admin, undefined, 'DELETE');
    expect((await call('/api/v1/agents', worker)).status).toBe(401);
    await new Promise((r) => setTimeout(r, 300));

    const logs = server.output();
    expect(logs.length).toBeGreaterThan(1000);
    expect(logs).toContain('"msg":"incoming request"');
    for (const secret of [secretOf(admin), secretOf(worker), secretOf(forged), 'not-a-key-Xy9Wv8Ut7', toolSecret, privateD, svid.body.svid, masterKey]) {
      expect(logs.includes(secret), `log contains ${secret.slice(0, 6)}...`).toBe(false);
    }
  });
});
