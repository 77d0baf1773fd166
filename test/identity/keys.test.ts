import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { open, seal } from '../../src/identity/encryption.js';
import { IdentityService } from '../../src/identity/service.js';
import { loadMasterKey } from '../../src/identity/master-key.js';
import { MAX_SPIFFE_ID_BYTES, parseSpiffeId, trustDomainError } from '../../src/identity/spiffe.js';
import { sql } from 'kysely';
import { dialect, expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { exchangeParams, postToken, svidFor } from './helpers.js';

let t: TestApp;
let acme: { id: string; key: string };
let globex: { id: string; key: string };
/** The app's clock: key lifetimes pass by moving it. */
const clock = new ManualClock();

beforeAll(async () => {
  t = await startApp({}, { clock });
  acme = await t.tenant('acme');
  globex = await t.tenant('globex');
});
afterAll(() => t.close());

const jwksKids = async (agentId: string) =>
  (await t.api().GET('/api/v1/identity/agents/{agentId}/jwks.json', { params: { path: { agentId } } })).data!.keys.map((k) => k.kid);
const rotate = (agentId: string, key: string | null = acme.key) =>
  t.api(key).POST('/api/v1/identity/agents/{agentId}/keys/rotate', { params: { path: { agentId } } });
const revoke = (agentId: string, keyId: string, key: string = acme.key) =>
  t.api(key).DELETE('/api/v1/identity/agents/{agentId}/keys/{keyId}', { params: { path: { agentId, keyId } } });
const keysOf = (agentId: string, key: string = acme.key) =>
  t.api(key).GET('/api/v1/identity/agents/{agentId}/keys', { params: { path: { agentId } } });

describe('configuration', () => {
  const base = { DATA_DIR: '/tmp/x', PUBLIC_BASE_URL: 'https://agents.example.com' };

  it('defaults ISSUER to PUBLIC_BASE_URL and TRUST_DOMAIN to agentry.local', () => {
    const c = loadConfig(base);
    expect(c.issuer).toBe('https://agents.example.com');
    expect(c.trustDomain).toBe('agentry.local');
    expect(c.masterKey).toBeUndefined();
    expect(loadConfig({ ...base, ISSUER: 'https://id.example.com/' }).issuer).toBe('https://id.example.com');
  });

  it('rejects bad ISSUER, TRUST_DOMAIN and MASTER_KEY values with the variable named', () => {
    const fails = (env: Record<string, string>, variable: string) => {
      try {
        loadConfig({ ...base, ...env });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).variable).toBe(variable);
        return (err as Error).message;
      }
      throw new Error(`expected ${variable} to be refused: ${JSON.stringify(env)}`);
    };
    fails({ ISSUER: 'not a url' }, 'ISSUER');
    fails({ ISSUER: 'ftp://x' }, 'ISSUER');
    for (const td of ['Agentry.local', 'agentry.local:8443', 'user@agentry', 'spiffe://agentry.local', 'a/b', 'a%41', 'a'.repeat(256)]) {
      fails({ TRUST_DOMAIN: td }, 'TRUST_DOMAIN');
    }
    const short = Buffer.alloc(16, 1).toString('base64');
    const msg = fails({ MASTER_KEY: short }, 'MASTER_KEY');
    expect(msg).not.toContain(short); // a secret, even a wrong one, is not echoed
    fails({ MASTER_KEY: 'not base64 !!' }, 'MASTER_KEY');
  });

  it('accepts a 32-byte base64 MASTER_KEY and never prints it', () => {
    const raw = Buffer.alloc(32, 7);
    const c = loadConfig({ ...base, MASTER_KEY: raw.toString('base64') });
    expect(c.masterKey!.reveal().equals(raw)).toBe(true);
    expect(JSON.stringify(c)).not.toContain(raw.toString('base64'));
    expect(String(c.masterKey)).toBe('[redacted]');
  });
});

describe('SPIFFE ID syntax', () => {
  it('accepts valid trust domains and IDs', () => {
    expect(trustDomainError('agentry.local')).toBeNull();
    expect(trustDomainError('prod_1-eu.example.org')).toBeNull();
    expect(parseSpiffeId('spiffe://agentry.local/tenant/a-b_c.d/agent/X1')).toEqual({
      trustDomain: 'agentry.local',
      segments: ['tenant', 'a-b_c.d', 'agent', 'X1'],
    });
  });

  it('rejects every broken rule', () => {
    const bad = [
      'spiffe://Agentry.local/a', // uppercase trust domain
      'spiffe://agentry.local:8080/a', // port
      'spiffe://user@agentry.local/a', // userinfo
      'spiffe://agentry.local/a?x=1', // query
      'spiffe://agentry.local/a#f', // fragment
      'spiffe://agentry.local/a%20b', // percent-encoding
      'spiffe://agentry.local/a//b', // empty segment
      'spiffe://agentry.local/a/./b', // dot segment
      'spiffe://agentry.local/a/../b', // dot-dot segment
      'spiffe://agentry.local/a/', // trailing slash
      'spiffe:///a', // no trust domain
      'https://agentry.local/a',
      `spiffe://agentry.local/${'a'.repeat(MAX_SPIFFE_ID_BYTES)}`, // over 2048 bytes
    ];
    for (const id of bad) expect(parseSpiffeId(id), id).toBeNull();
  });

  it('gives agents SPIFFE IDs that satisfy the syntax', async () => {
    const a = await t.agent(acme.key);
    const { spiffeId } = await svidFor(t, acme.key, a.id, 'x');
    expect(spiffeId).toBe(`spiffe://agentry.local/tenant/${acme.id}/agent/${a.id}`);
    expect(parseSpiffeId(spiffeId)).not.toBeNull();
    expect(Buffer.byteLength(spiffeId)).toBeLessThanOrEqual(2048);
  });
});

describe('private keys at rest', () => {
  it('generates DATA_DIR/master.key with mode 0600 when MASTER_KEY is unset, and reuses it', () => {
    const file = path.join(t.config.dataDir, 'master.key');
    const stat = fs.statSync(file);
    expect(stat.mode & 0o777).toBe(0o600);
    const key = loadMasterKey(t.config);
    expect(key).toHaveLength(32);
    expect(loadMasterKey(t.config).equals(key)).toBe(true);
  });

  it('creates one master key when several processes race for it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-mk-'));
    const keys = Array.from({ length: 5 }, () => loadMasterKey({ dataDir: dir, masterKey: undefined }));
    expect(new Set(keys.map((k) => k.toString('hex'))).size).toBe(1);
    expect(fs.readdirSync(dir)).toEqual(['master.key']);
    fs.rmSync(dir, { recursive: true });
  });

  it('stores private keys only sealed with AES-256-GCM, bound to their row', async () => {
    const a = await t.agent(acme.key);
    await jwksKids(a.id);
    const rows = [
      ...(await t.db.kysely.selectFrom('identity_agent_keys').selectAll().where('agent_id', '=', a.id).execute()),
      ...(await t.db.kysely.selectFrom('identity_platform_keys').selectAll().execute()),
    ];
    expect(rows.length).toBeGreaterThanOrEqual(2);
    const master = loadMasterKey(t.config);
    for (const row of rows) {
      expect(row.private_jwk).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(row.private_jwk).not.toContain('"d"');
      const aad = 'agent_id' in row ? `agent-key:${row.kid}` : `platform-key:${row.kid}`;
      const jwk = JSON.parse(open(master, row.private_jwk, aad));
      expect(jwk).toMatchObject({ kty: 'EC', crv: 'P-256', d: expect.any(String) });
      // Another master key, or another row's binding, cannot open it.
      expect(() => open(Buffer.alloc(32, 9), row.private_jwk, aad)).toThrow(/MASTER_KEY/);
      expect(() => open(master, row.private_jwk, 'agent-key:other')).toThrow();
    }
    expect(open(master, seal(master, 'hello', 'x'), 'x')).toBe('hello');
  });
});

describe('agent key rotation and revocation', () => {
  it('rotates: a new key is active, the old one is rotated and stays published until it expires', async () => {
    const a = await t.agent(acme.key);
    const [first] = await jwksKids(a.id);
    const { data: rotated, response } = await rotate(a.id);
    expect(response.status).toBe(201);
    expect(rotated!.key).toMatchObject({
      status: 'active',
      rotatedAt: null,
      revokedAt: null,
      publicJwk: { kty: 'EC', crv: 'P-256', kid: rotated!.key.kid },
    });
    expect(rotated!.key.kid).not.toBe(first);
    expect(rotated!.rotated).toHaveLength(1);
    const old = rotated!.rotated[0];
    expect(old).toMatchObject({ kid: first, status: 'rotated' });
    // Grace period: 24 hours.
    expect(Date.parse(old.expiresAt!) - Date.parse(old.rotatedAt!)).toBe(24 * 3600 * 1000);
    expect(rotated).not.toHaveProperty('privateJwk'); // platform-hosted agents never see private keys
    expect((await jwksKids(a.id)).sort()).toEqual([first, rotated!.key.kid].sort());

    const list = await keysOf(a.id);
    expect(list.response.status).toBe(200);
    expect(list.data!.keys.map((k) => [k.kid, k.status])).toEqual([
      [rotated!.key.kid, 'active'],
      [first, 'rotated'],
    ]);
    expect(JSON.stringify(list.data)).not.toContain('"d"');

    // Once the grace period is over the rotated key is no longer published.
    const grace = 24 * 3600 * 1000 + 1000;
    clock.advance(grace);
    try {
      expect(await jwksKids(a.id)).toEqual([rotated!.key.kid]);
    } finally {
      clock.advance(-grace);
    }
  });

  it('gives an externally hosted agent its new private key, once', async () => {
    const ext = await t.agent(acme.key, { hosting: 'external' });
    const { data: rotated, response } = await rotate(ext.id);
    expect(response.status).toBe(201);
    expect(rotated!.rotated).toEqual([]); // it had no key yet
    expect(rotated!.privateJwk).toMatchObject({ kty: 'EC', crv: 'P-256', d: expect.any(String), kid: rotated!.key.kid });
    const list = await keysOf(ext.id);
    expect(JSON.stringify(list.data)).not.toContain(rotated!.privateJwk!.d);
  });

  it('keeps one active key under concurrent rotations', async () => {
    const a = await t.agent(acme.key);
    const results = await Promise.all(Array.from({ length: 4 }, () => rotate(a.id)));
    for (const r of results) expect([201, 409]).toContain(r.response.status);
    const rows = await t.db.kysely.selectFrom('identity_agent_keys').selectAll().where('agent_id', '=', a.id).execute();
    expect(rows.filter((r) => r.status === 'active')).toHaveLength(1);
    expect(new Set(rows.map((r) => r.generation)).size).toBe(rows.length);
  });

  it('revokes a key: gone from the JWKS at once; a new key appears on next use', async () => {
    const a = await t.agent(acme.key);
    const [kid] = await jwksKids(a.id);
    expect((await revoke(a.id, kid)).response.status).toBe(204);
    const after = await jwksKids(a.id);
    expect(after).not.toContain(kid);
    expect(after).toHaveLength(1);
    const list = (await keysOf(a.id)).data!.keys;
    expect(list.find((k) => k.kid === kid)).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
    // Revoking again is idempotent.
    expect((await revoke(a.id, kid)).response.status).toBe(204);
  });

  it('revokes a rotated key before its grace period ends', async () => {
    const a = await t.agent(acme.key);
    const [old] = await jwksKids(a.id);
    await rotate(a.id);
    expect(await jwksKids(a.id)).toContain(old);
    expect((await revoke(a.id, old)).response.status).toBe(204);
    expect(await jwksKids(a.id)).not.toContain(old);
  });

  it("enforces the key-agent binding: 404 for another agent's key, another tenant, unknown keys", async () => {
    const a = await t.agent(acme.key);
    const b = await t.agent(acme.key);
    const [kidA] = await jwksKids(a.id);
    expectProblem(await revoke(b.id, kidA), 404, 'not_found');
    expectProblem(await revoke(a.id, kidA, globex.key), 404, 'not_found');
    expectProblem(await revoke(a.id, 'nope'), 404, 'not_found');
    expectProblem(await rotate(a.id, globex.key), 404, 'not_found');
    expectProblem(await keysOf(a.id, globex.key), 404, 'not_found');
    expect(await jwksKids(a.id)).toEqual([kidA]);
  });

  it('needs agents:write to rotate or revoke', async () => {
    const a = await t.agent(acme.key);
    const reader = await t.key(acme.key, ['agents:read']);
    expectProblem(await rotate(a.id, reader), 403, 'forbidden');
    expectProblem(await revoke(a.id, 'x', reader), 403, 'forbidden');
    expectProblem(await rotate(a.id, null), 401, 'missing_credentials');
    expect((await keysOf(a.id, reader)).response.status).toBe(200);
  });

  it('audits rotations and revocations', async () => {
    const a = await t.agent(acme.key);
    const [kid] = await jwksKids(a.id);
    await rotate(a.id);
    await revoke(a.id, kid);
    const events = (await t.api(acme.key).GET('/api/v1/audit-events', { params: { query: { resourceId: a.id } } })).data!.events;
    const actions = events.map((e) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['identity.agent_key_rotated', 'identity.agent_key_revoked']));
    expect(events.find((e) => e.action === 'identity.agent_key_revoked')!.detail).toMatchObject({ kid });
  });
});

describe('a change and its audit event in one transaction', () => {
  /** Makes the database refuse audit events of this action, as a full disk or a failing write would. */
  async function refuseAudit(action: string) {
    if (dialect === 'sqlite') {
      await sql
        .raw(
          `CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events WHEN NEW.action = '${action}' BEGIN SELECT RAISE(ABORT, 'audit refused'); END`,
        )
        .execute(t.db.kysely);
    } else {
      await sql
        .raw(
          `CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.action = '${action}' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$;
           CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()`,
        )
        .execute(t.db.kysely);
    }
    return async () => {
      await sql.raw('DROP TRIGGER refuse_audit' + (dialect === 'sqlite' ? '' : ' ON audit_events')).execute(t.db.kysely);
      if (dialect === 'postgres') await sql.raw('DROP FUNCTION refuse_audit()').execute(t.db.kysely);
    };
  }

  const svidsOf = (agentId: string) =>
    t.db.kysely
      .selectFrom('identity_tokens')
      .select(['jti', 'revoked_at'])
      .where('agent_id', '=', agentId)
      .where('kind', '=', 'svid')
      .execute();

  it('leaves the keys as they were when the rotation cannot be audited', async () => {
    const a = await t.agent(acme.key);
    const before = (await keysOf(a.id)).data!.keys;
    const allow = await refuseAudit('identity.agent_key_rotated');
    try {
      expect((await rotate(a.id)).response.status).toBe(500);
    } finally {
      await allow();
    }
    expect((await keysOf(a.id)).data!.keys).toEqual(before);
  });

  it('leaves the key and its tokens in force when the revocation cannot be audited', async () => {
    const a = await t.agent(acme.key);
    const b = await t.agent(acme.key);
    const { svid } = await svidFor(t, acme.key, a.id);
    const [kid] = await jwksKids(a.id);
    const allow = await refuseAudit('identity.agent_key_revoked');
    try {
      expect((await revoke(a.id, kid)).response.status).toBe(500);
    } finally {
      await allow();
    }
    expect((await keysOf(a.id)).data!.keys.find((k) => k.kid === kid)).toMatchObject({ status: 'active', revokedAt: null });
    expect((await svidsOf(a.id)).map((r) => r.revoked_at)).toEqual([null]);
    // The SVID bound to the key still exchanges: nothing of the revocation was kept.
    const { response, error } = await postToken(t, exchangeParams(svid, b.id, 'tools:*'));
    expect(response.status, JSON.stringify(error)).toBe(200);
  });

  it('records no SVID that was not audited', async () => {
    const a = await t.agent(acme.key);
    const allow = await refuseAudit('identity.svid_issued');
    try {
      const { response } = await t
        .api(acme.key)
        .POST('/api/v1/identity/agents/{agentId}/svid', { params: { path: { agentId: a.id } }, body: { audience: t.config.issuer } });
      expect(response.status).toBe(500);
    } finally {
      await allow();
    }
    expect(await svidsOf(a.id)).toEqual([]);
  });
});

describe('platform key creation', () => {
  it('creates one signing key when several processes start on a fresh database at once', async () => {
    const fresh = await startApp();
    try {
      expect(await fresh.db.kysely.selectFrom('identity_platform_keys').selectAll().execute()).toHaveLength(0);
      // Separate service instances stand for separate processes sharing the database.
      const services = Array.from(
        { length: 4 },
        () => new IdentityService({ db: fresh.db, config: fresh.config, tenancy: fresh.services.tenancy, agents: fresh.services.agents }),
      );
      const jwks = await Promise.all(services.map((s) => s.platformJwks()));
      const rows = await fresh.db.kysely.selectFrom('identity_platform_keys').selectAll().execute();
      expect(rows).toHaveLength(1);
      for (const j of jwks) expect(j.keys.map((k) => k.kid)).toEqual([rows[0].kid]);
    } finally {
      await fresh.close();
    }
  });
});

describe('platform key rotation', () => {
  // Where a test waits for a key to take over, the app's clock moves on instead, for the rest of this block.
  let start: number;
  beforeAll(() => {
    start = clock.now();
  });
  afterAll(() => {
    clock.set(start);
  });
  const bundle = async () => (await t.api().GET('/.well-known/spiffe/trust-bundle')).data!;
  const signingKid = async () => {
    const a = await t.agent(acme.key);
    return decodeProtectedHeader((await svidFor(t, acme.key, a.id, 'x')).svid).kid;
  };

  it('publishes the new key before it signs anything, then switches, keeping the old key published', async () => {
    const oldKid = await signingKid();
    const before = await bundle();
    const rotated = await t.services.identity.rotatePlatformKey(2);
    expect(rotated.status).toBe('pending');
    const during = await bundle();
    expect(during.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, rotated.kid]));
    expect(during.spiffe_sequence).toBeGreaterThan(before.spiffe_sequence);
    const jwks = (await t.api().GET('/api/v1/identity/.well-known/jwks.json')).data!.keys.map((k) => k.kid);
    expect(jwks).toContain(rotated.kid);
    expect(await signingKid()).toBe(oldKid); // published, not yet signing

    clock.advance(2100);
    expect(await signingKid()).toBe(rotated.kid);
    const after = await bundle();
    expect(after.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, rotated.kid]));
    expect(after.spiffe_sequence).toBe(during.spiffe_sequence); // content unchanged: same sequence
    const listed = await t.services.identity.listPlatformKeys();
    expect(listed.find((k) => k.kid === oldKid)!.status).toBe('retired');
    expect(listed.find((k) => k.kid === rotated.kid)!.status).toBe('active');
  });

  it('drops a retired key once the longest token lifetime has passed, and the sequence moves up', async () => {
    const kids = (await t.services.identity.listPlatformKeys()).filter((k) => k.status === 'retired').map((k) => k.kid);
    expect(kids.length).toBeGreaterThan(0);
    const before = await bundle();
    const lifetime = (86400 + 301) * 1000;
    clock.advance(lifetime);
    try {
      const later = await bundle();
      for (const kid of kids) expect(later.keys.map((k) => k.kid)).not.toContain(kid);
      expect(later.spiffe_sequence).toBeGreaterThan(before.spiffe_sequence);
    } finally {
      clock.advance(-lifetime);
    }
  });

  it('revokes a platform key: it leaves the bundle at once and its tokens stop verifying', async () => {
    const a = await t.agent(acme.key);
    const { svid } = await svidFor(t, acme.key, a.id);
    const kid = decodeProtectedHeader(svid).kid!;
    const seq = (await bundle()).spiffe_sequence;
    expect(await t.services.identity.revokePlatformKey(kid)).toBe(true);
    const after = await bundle();
    expect(after.keys.map((k) => k.kid)).not.toContain(kid);
    expect(after.spiffe_sequence).toBeGreaterThan(seq);
    // A new signing key exists at once, and the old SVID no longer verifies.
    expect(await signingKid()).not.toBe(kid);
    const b = await t.agent(acme.key);
    const res = await postToken(t, exchangeParams(svid, b.id, 'tools:x'));
    expect(res.response.status).toBe(400);
    expect(res.error!.error).toBe('invalid_grant');
  });

  it('never lets the sequence go down across many changes', async () => {
    const seen: number[] = [(await bundle()).spiffe_sequence];
    for (let i = 0; i < 3; i++) {
      const k = await t.services.identity.rotatePlatformKey(3600);
      seen.push((await bundle()).spiffe_sequence);
      await t.services.identity.revokePlatformKey(k.kid);
      seen.push((await bundle()).spiffe_sequence);
    }
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1]);
  });
});
