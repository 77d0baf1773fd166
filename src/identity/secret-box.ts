import crypto from 'node:crypto';

/**
 * The one sealed-box format of secrets at rest (agents' and the platform's private keys, webhook
 * secrets, connector credentials): AES-256-GCM under a key derived (HKDF-SHA256) from the platform
 * master key (`MASTER_KEY`, or `DATA_DIR/master.key`) for one purpose, never stored in the database.
 *
 * Stored form: `v1.<key id>.<iv>.<ciphertext and tag>` (base64url; the 16-byte GCM tag follows the
 * ciphertext, as Web Crypto writes it). The key id names the key that sealed it (`mk`: the master
 * key), so a rotated master key can be told apart. The owner (a row id) is authenticated with the
 * ciphertext, so a sealed value copied onto another row does not open there; a value sealed under
 * another master key or purpose does not open either. Values stored in the two earlier formats were
 * re-sealed by migration 0012.
 */
const VERSION = 'v1';
const MASTER_KEY_ID = 'mk';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Whether `value` has the shape of a sealed box (not whether it opens). */
export function isSealedBox(value: string): boolean {
  const parts = value.split('.');
  return parts.length === 4 && parts[0] === VERSION && parts[1] === MASTER_KEY_ID;
}

export class SecretBox {
  private readonly key: Buffer;

  constructor(masterKey: Buffer, purpose: string) {
    this.key = Buffer.from(crypto.hkdfSync('sha256', masterKey, 'agentry', purpose, 32));
  }

  /** Seals `plain` for the row named by `owner`. */
  seal(plain: string, owner: string): string {
    const iv = crypto.randomBytes(IV_BYTES);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(owner, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, MASTER_KEY_ID, iv.toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The secret, or null when it cannot be opened (another key, another row, damaged value). */
  open(sealed: string, owner: string): string | null {
    if (!isSealedBox(sealed)) return null;
    const [, , iv, encoded] = sealed.split('.');
    const body = Buffer.from(encoded, 'base64url');
    if (body.length < TAG_BYTES) return null;
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(owner, 'utf8'));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}
