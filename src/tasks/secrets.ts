import crypto from 'node:crypto';
import type { Db } from '../db/database.js';
import { now } from '../ids.js';
import * as store from './store.js';

/**
 * Webhook secrets and signatures (docs/scheduling.md, "Webhook triggers").
 *
 * The platform must read a webhook secret back to check signatures, so it cannot keep only a hash.
 * It keeps the secret sealed with AES-256-GCM. The key comes from SECRET_KEY (HKDF-SHA256) when that
 * is configured; otherwise from a random key generated once and kept in the database table
 * `task_secret_keys`, shared by every replica. The second mode keeps secrets out of task rows, backups
 * of single tables, logs and API answers, but not from someone who can read the whole database:
 * set SECRET_KEY in production. A sealed value names its key (`env` or `db`), so a secret sealed
 * under a key that is no longer available fails verification (401) instead of being misread. The
 * task id is authenticated with the ciphertext (AES-GCM additional data), so a sealed secret copied
 * onto another task's row does not open there.
 */

export const SIGNATURE_HEADER = 'x-agentry-signature';
export const TIMESTAMP_HEADER = 'x-agentry-timestamp';
/** A signed delivery is accepted this long around its timestamp; the same delivery only once. */
export const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

export const newWebhookSecret = () => `whsec_${crypto.randomBytes(32).toString('base64url')}`;

type KeyId = 'env' | 'db';
const DB_KEY_ID = 'webhook-secrets';

export class SecretBox {
  private dbKey: Promise<Buffer> | undefined;
  private readonly envKey: Buffer | undefined;

  constructor(
    private readonly db: Db,
    configured: string | undefined,
  ) {
    this.envKey = configured
      ? Buffer.from(crypto.hkdfSync('sha256', configured, 'agentry', 'webhook-secrets', 32))
      : undefined;
  }

  private loadDbKey(): Promise<Buffer> {
    this.dbKey ??= (async () => {
      const existing = await store.findSecretKey(this.db.kysely, DB_KEY_ID);
      if (existing) return Buffer.from(existing.key, 'base64');
      // Two replicas may race here: the first insert wins and both read it back.
      await store.insertSecretKey(this.db.kysely, DB_KEY_ID, crypto.randomBytes(32).toString('base64'), now());
      const row = await store.findSecretKey(this.db.kysely, DB_KEY_ID);
      return Buffer.from(row!.key, 'base64');
    })().catch((err) => {
      this.dbKey = undefined;
      throw err;
    });
    return this.dbKey;
  }

  private async key(id: KeyId): Promise<Buffer | undefined> {
    return id === 'env' ? this.envKey : this.loadDbKey();
  }

  /** Seals `plain` for the row named by `owner` (e.g. the task id). */
  async seal(plain: string, owner: string): Promise<string> {
    const id: KeyId = this.envKey ? 'env' : 'db';
    const key = (await this.key(id))!;
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(owner, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', id, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The secret, or null when it cannot be opened (another key, another row, damaged value). */
  async open(sealed: string, owner: string): Promise<string | null> {
    const [version, id, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || (id !== 'env' && id !== 'db') || !iv || !tag || body === undefined) return null;
    const key = await this.key(id);
    if (!key) return null;
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(owner, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}

/** HMAC-SHA256 over `<timestamp>.<raw body>`, hex: what a sender puts after `sha256=`. */
export function signature(secret: string, timestamp: string, rawBody: Buffer | string): string {
  return crypto.createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

export type SignatureCheck = 'ok' | 'missing_signature' | 'invalid_signature' | 'signature_expired';

/** Checks a delivery's signature headers against the secret, in constant time. */
export function checkSignature(
  secret: string,
  timestamp: string | undefined,
  header: string | undefined,
  rawBody: Buffer,
  nowMs: number,
): SignatureCheck {
  if (!timestamp || !header) return 'missing_signature';
  if (!/^\d{1,12}$/.test(timestamp)) return 'invalid_signature';
  if (Math.abs(nowMs - Number(timestamp) * 1000) > SIGNATURE_TOLERANCE_MS) return 'signature_expired';
  const m = /^sha256=([0-9a-f]{64})$/i.exec(header.trim());
  if (!m) return 'invalid_signature';
  const given = Buffer.from(m[1], 'hex');
  const expected = Buffer.from(signature(secret, timestamp, rawBody), 'hex');
  return crypto.timingSafeEqual(given, expected) ? 'ok' : 'invalid_signature';
}
