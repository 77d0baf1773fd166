import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationProvider } from '../../src/db/migrations/index.js';
import { open } from '../../src/identity/encryption.js';
import { loadMasterKey } from '../../src/identity/master-key.js';
import { SecretBox } from '../../src/identity/secret-box.js';
import { signature } from '../../src/tasks/webhook-signatures.js';
import { startApp, type TestApp } from '../helpers/app.js';

// The two formats stored before migration 0012, written as the code of that time wrote them.
function legacyPrivateKey(masterKey: Buffer, plain: string, aad: string): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', masterKey, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
}

function legacySecret(masterKey: Buffer, purpose: string, plain: string, owner: string): string {
  const key = Buffer.from(crypto.hkdfSync('sha256', masterKey, 'agentry', purpose, 32));
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(owner, 'utf8'));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return ['v1', 'mk', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
}

const SEALED = /^v1\.mk\.[\w-]+\.[\w-]+$/;

let t: TestApp;
let key: string;
let master: Buffer;

async function migration0012(masterKey?: Buffer) {
  const migrations = await migrationProvider({ masterKey: masterKey && (() => masterKey) }).getMigrations();
  return migrations['0012_one_sealed_box'];
}

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant());
  master = loadMasterKey(t.config);
});
afterAll(() => t.close());

describe('migration 0012: one sealed-box format', () => {
  it('re-seals private keys, webhook secrets and connector credentials stored in the earlier formats, and they still read', async () => {
    const agent = await t.agent(key);
    const agentJwks = await t.api().GET('/api/v1/identity/agents/{agentId}/jwks.json', { params: { path: { agentId: agent.id } } });
    expect(agentJwks.response.status).toBe(200);
    expect((await t.api().GET('/api/v1/identity/.well-known/jwks.json')).response.status).toBe(200);
    const created = await t.api(key).POST('/api/v1/tasks', {
      body: { name: 'Hook', description: 'ping', agentId: agent.id, type: 'triggered', trigger: { type: 'webhook' } },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    const task = created.data!;
    const connected = await t.api(key).POST('/api/v1/connectors/{id}/connect', {
      params: { path: { id: 'github' } },
      body: { configuration: { accessToken: 'ghp_0123456789abcdefghijklmnopqrstuvwxyz', organization: 'acme-corp' } },
    });
    expect(connected.response.status, JSON.stringify(connected.error)).toBe(201);

    // Every stored secret back in its earlier format, as a database of the previous release holds it.
    const keys = [
      ...(
        await t.db.kysely.selectFrom('identity_agent_keys').select(['kid', 'private_jwk']).where('agent_id', '=', agent.id).execute()
      ).map((r) => ({ ...r, table: 'identity_agent_keys' as const, aad: `agent-key:${r.kid}` })),
      ...(await t.db.kysely.selectFrom('identity_platform_keys').select(['kid', 'private_jwk']).execute()).map((r) => ({
        ...r,
        table: 'identity_platform_keys' as const,
        aad: `platform-key:${r.kid}`,
      })),
    ];
    expect(keys.length).toBeGreaterThanOrEqual(2);
    const jwks = new Map<string, string>();
    for (const k of keys) {
      const plain = open(master, k.private_jwk, k.aad);
      jwks.set(k.kid, plain);
      await t.db.kysely
        .updateTable(k.table)
        .set({ private_jwk: legacyPrivateKey(master, plain, k.aad) })
        .where('kid', '=', k.kid)
        .execute();
    }
    if (task.trigger?.type !== 'webhook' || !task.trigger.secret) throw new Error(`no webhook secret: ${JSON.stringify(task.trigger)}`);
    const webhookSecret = task.trigger.secret;
    await t.db.kysely
      .updateTable('tasks')
      .set({ webhook_secret: legacySecret(master, 'webhook-secrets', webhookSecret, task.id) })
      .where('id', '=', task.id)
      .execute();
    const connection = await t.db.kysely
      .selectFrom('connector_connections')
      .select(['id', 'tenant_id', 'configuration'])
      .where('connector_id', '=', 'github')
      .executeTakeFirstOrThrow();
    const connectorBox = new SecretBox(master, 'connector-configurations');
    const configuration = connectorBox.open(connection.configuration, `${connection.tenant_id}/github`)!;
    await t.db.kysely
      .updateTable('connector_connections')
      .set({ configuration: legacySecret(master, 'connector-configurations', configuration, `${connection.tenant_id}/github`) })
      .where('id', '=', connection.id)
      .execute();

    // Without the master key the migration refuses to run rather than leave secrets it cannot read.
    await expect((await migration0012()).up(t.db.kysely)).rejects.toThrow(/master key/);
    await (await migration0012(master)).up(t.db.kysely);

    for (const k of keys) {
      const row = await t.db.kysely.selectFrom(k.table).select('private_jwk').where('kid', '=', k.kid).executeTakeFirstOrThrow();
      expect(row.private_jwk).toMatch(SEALED);
      expect(open(master, row.private_jwk, k.aad)).toBe(jwks.get(k.kid));
    }
    const taskRow = await t.db.kysely.selectFrom('tasks').select('webhook_secret').where('id', '=', task.id).executeTakeFirstOrThrow();
    expect(taskRow.webhook_secret).toMatch(SEALED);
    expect(new SecretBox(master, 'webhook-secrets').open(taskRow.webhook_secret!, task.id)).toBe(webhookSecret);
    const connectionRow = await t.db.kysely
      .selectFrom('connector_connections')
      .select('configuration')
      .where('id', '=', connection.id)
      .executeTakeFirstOrThrow();
    expect(connectionRow.configuration).toMatch(SEALED);
    expect(connectorBox.open(connectionRow.configuration, `${connection.tenant_id}/github`)).toBe(configuration);

    // The product reads them: a delivery signed with the webhook secret is accepted, the connection still shows.
    const ts = String(Math.floor(Date.now() / 1000));
    const delivered = await t.api().POST('/api/v1/hooks/{taskId}', {
      params: { path: { taskId: task.id } },
      headers: { 'x-agentry-timestamp': ts, 'x-agentry-signature': `sha256=${signature(webhookSecret, ts, '')}` },
    });
    expect(delivered.response.status, JSON.stringify(delivered.error)).toBe(202);
    const shown = await t.api(key).GET('/api/v1/connectors/{id}', { params: { path: { id: 'github' } } });
    expect(shown.data!.connection!.configuration).toEqual({ accessToken: '********', organization: 'acme-corp' });

    // Run again, it finds nothing left to convert, and needs no key for that.
    await (await migration0012()).up(t.db.kysely);
  });
});
