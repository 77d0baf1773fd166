import { Agentry } from '@agentry/client';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type TestDatabase, type TestProcess } from '../helpers/app.js';
import { cli, type ServerProcess } from '../helpers/process.js';
import { svidBody } from './helpers.js';

let database: TestDatabase;
let server: ServerProcess;
let proc: TestProcess;

beforeAll(async () => {
  proc = await startProcess({ LOG_LEVEL: 'warn' });
  ({ database, server } = proc);
});
afterAll(() => proc?.close());

describe('agentry identity (CLI) next to a running server', () => {
  it('rotates the platform key: the server publishes the new key at once and keeps signing with the old one', async () => {
    const tenant = JSON.parse((await cli(['tenants', 'create', 'Acme', '--json'], database.env)).stdout);
    const client = new Agentry({ baseUrl: server.url, apiKey: tenant.apiKey });
    const bundle = () => client.identity.trustBundle();
    const agent = await client.agents.create({ name: 'a', appId: 'x' });
    const svid = async () => (await client.identity.svid(agent.id, svidBody('x'))).svid;
    const before = await bundle();
    const oldKid = decodeProtectedHeader(await svid()).kid;

    const rotated = await cli(['identity', 'rotate-platform-key', '--json'], database.env);
    expect(rotated.code, rotated.stderr).toBe(0);
    const { key } = JSON.parse(rotated.stdout);
    expect(key).toMatchObject({ status: 'pending', kid: expect.any(String) });
    expect(Date.parse(key.activatesAt) - Date.parse(key.createdAt)).toBe(3600 * 1000);

    const after = await bundle();
    expect(after.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, key.kid]));
    expect(after.spiffe_sequence).toBeGreaterThan(before.spiffe_sequence);
    expect(decodeProtectedHeader(await svid()).kid).toBe(oldKid);

    const listed = await cli(['identity', 'platform-keys', '--json'], database.env);
    expect(JSON.parse(listed.stdout).keys.map((k: { kid: string; status: string }) => [k.kid, k.status])).toEqual([
      [oldKid, 'active'],
      [key.kid, 'pending'],
    ]);

    const revoked = await cli(['identity', 'revoke-platform-key', key.kid], database.env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await bundle()).keys.map((k) => k.kid)).not.toContain(key.kid);
    const unknown = await cli(['identity', 'revoke-platform-key', 'nope'], database.env);
    expect(unknown.code).toBe(2);
    // A kid is a base64url thumbprint and may begin with '-': it is still the kid, not an option.
    const dashed = await cli(['identity', 'revoke-platform-key', '-kNope', '--json'], database.env);
    expect(dashed.code).toBe(2);
    expect(dashed.stderr).toContain('no platform key -kNope');
    const bad = await cli(['identity', 'rotate-platform-key', '--activate-in', 'soon'], database.env);
    expect(bad.code).toBe(2);
  });
});
