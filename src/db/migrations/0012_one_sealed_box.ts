import crypto from 'node:crypto';
import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Secrets at rest had two AES-256-GCM formats: private keys as `v1.<iv>.<tag>.<ciphertext>` under the
 * master key itself, and webhook secrets and connector credentials as `v1.mk.<iv>.<tag>.<ciphertext>`
 * under a key derived for their purpose. This re-seals both into the one format of
 * identity/secret-box.ts, `v1.mk.<iv>.<ciphertext and tag>` under a derived key (private keys under
 * the purpose `private-keys`), each bound to the same owner as before. The code is a frozen copy,
 * as a migration must produce the same result whatever the product's code becomes.
 *
 * Re-sealing needs the master key; a database holding nothing to convert (a new one) needs none.
 */
export interface SealedBoxMigrationContext {
  /** The platform master key (identity/master-key.ts), asked for only when a stored value needs it. */
  masterKey?: () => Buffer;
}

const IV_BYTES = 12;

const derive = (masterKey: Buffer, purpose: string) => Buffer.from(crypto.hkdfSync('sha256', masterKey, 'agentry', purpose, 32));

function decrypt(key: Buffer, iv: string, tag: string, ciphertext: string, owner: string): string {
  const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(owner, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}

function sealV1(key: Buffer, plain: string, owner: string): string {
  const iv = crypto.randomBytes(IV_BYTES);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(owner, 'utf8'));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return ['v1', 'mk', iv.toString('base64url'), body.toString('base64url')].join('.');
}

/** `v1.<iv>.<tag>.<ciphertext>`: a private key sealed under the master key itself. */
const isOldPrivateKey = (v: string) => {
  const parts = v.split('.');
  return parts.length === 4 && parts[0] === 'v1' && parts[1] !== 'mk';
};
/** `v1.mk.<iv>.<tag>.<ciphertext>`: a secret sealed under a purpose's key, tag before the ciphertext. */
const isOldSecret = (v: string) => {
  const parts = v.split('.');
  return parts.length === 5 && parts[0] === 'v1' && parts[1] === 'mk';
};

function unreadable(what: string): never {
  throw new Error(
    `migration 0012 cannot open ${what} with this master key: start with the MASTER_KEY (or DATA_DIR/master.key) that sealed it`,
  );
}

export function sealedBoxMigration(context: SealedBoxMigrationContext): Migration {
  return {
    async up(db: Kysely<unknown>) {
      let masterKey: Buffer | undefined;
      const key = () => {
        if (!masterKey) {
          if (!context.masterKey)
            throw new Error('migration 0012 re-seals stored secrets and needs the master key (MASTER_KEY or DATA_DIR/master.key)');
          masterKey = context.masterKey();
        }
        return masterKey;
      };

      for (const [table, ownerPrefix] of [
        ['identity_platform_keys', 'platform-key'],
        ['identity_agent_keys', 'agent-key'],
      ] as const) {
        const rows = await sql<{ kid: string; private_jwk: string }>`select kid, private_jwk from ${sql.table(table)}`.execute(db);
        for (const row of rows.rows.filter((r) => isOldPrivateKey(r.private_jwk))) {
          const owner = `${ownerPrefix}:${row.kid}`;
          const [, iv, tag, ciphertext] = row.private_jwk.split('.');
          let plain: string;
          try {
            plain = decrypt(key(), iv, tag, ciphertext, owner);
          } catch {
            unreadable(`the private key ${owner}`);
          }
          const resealed = sealV1(derive(key(), 'private-keys'), plain, owner);
          await sql`update ${sql.table(table)} set private_jwk = ${resealed} where kid = ${row.kid}`.execute(db);
        }
      }

      const webhookKey = () => derive(key(), 'webhook-secrets');
      const tasks = await sql<{
        id: string;
        webhook_secret: string;
      }>`select id, webhook_secret from tasks where webhook_secret is not null`.execute(db);
      for (const row of tasks.rows.filter((r) => isOldSecret(r.webhook_secret))) {
        const [, , iv, tag, ciphertext] = row.webhook_secret.split('.');
        let plain: string;
        try {
          plain = decrypt(webhookKey(), iv, tag, ciphertext, row.id);
        } catch {
          unreadable(`the webhook secret of task ${row.id}`);
        }
        await sql`update tasks set webhook_secret = ${sealV1(webhookKey(), plain, row.id)} where id = ${row.id}`.execute(db);
      }

      const connectorKey = () => derive(key(), 'connector-configurations');
      const connections = await sql<{ id: string; tenant_id: string; connector_id: string; configuration: string }>`
        select id, tenant_id, connector_id, configuration from connector_connections`.execute(db);
      for (const row of connections.rows.filter((r) => isOldSecret(r.configuration))) {
        const owner = `${row.tenant_id}/${row.connector_id}`;
        const [, , iv, tag, ciphertext] = row.configuration.split('.');
        let plain: string;
        try {
          plain = decrypt(connectorKey(), iv, tag, ciphertext, owner);
        } catch {
          unreadable(`the configuration of connector ${owner}`);
        }
        await sql`update connector_connections set configuration = ${sealV1(connectorKey(), plain, owner)} where id = ${row.id}`.execute(
          db,
        );
      }
    },
    // The earlier formats are not written back: their readers are gone.
    async down() {},
  };
}
