import crypto from 'node:crypto';

/**
 * Webhook secrets and signatures (docs/scheduling.md, "Webhook triggers").
 *
 * The platform must read a webhook secret back to check signatures, so it cannot keep only a hash.
 * It keeps the secret sealed with AES-256-GCM under a key derived (HKDF-SHA256) from the platform
 * master key, the one that also seals agents' private keys (`MASTER_KEY`, or `DATA_DIR/master.key`):
 * one key to keep and back up for every secret at rest, never stored in the database. The task id is
 * authenticated with the ciphertext (AES-GCM additional data), so a sealed secret copied onto another
 * task's row does not open there; a value sealed under another master key fails verification (401).
 */

export const SIGNATURE_HEADER = 'x-agentry-signature';
export const TIMESTAMP_HEADER = 'x-agentry-timestamp';
/** A signed delivery is accepted this long around its timestamp; the same delivery only once. */
export const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

export const newWebhookSecret = () => `whsec_${crypto.randomBytes(32).toString('base64url')}`;

export class SecretBox {
  private readonly key: Buffer;

  constructor(masterKey: Buffer) {
    this.key = Buffer.from(crypto.hkdfSync('sha256', masterKey, 'agentry', 'webhook-secrets', 32));
  }

  /** Seals `plain` for the row named by `owner` (e.g. the task id). */
  seal(plain: string, owner: string): string {
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(owner, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', 'mk', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The secret, or null when it cannot be opened (another key, another row, damaged value). */
  open(sealed: string, owner: string): string | null {
    const [version, id, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || id !== 'mk' || !iv || !tag || body === undefined) return null;
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
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
