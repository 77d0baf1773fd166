import crypto from 'node:crypto';

/**
 * Secrets the platform must read back (webhook secrets, connector credentials), sealed with
 * AES-256-GCM under a key derived (HKDF-SHA256) from the platform master key for one purpose — the
 * key that also seals agents' private keys (`MASTER_KEY`, or `DATA_DIR/master.key`): one key to keep for
 * every secret at rest, never stored in the database. The owner (a row id) is authenticated with the
 * ciphertext, so a sealed value copied onto another row does not open there; a value sealed under
 * another master key or purpose does not open either.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(masterKey: Buffer, purpose: string) {
    this.key = Buffer.from(crypto.hkdfSync('sha256', masterKey, 'agentry', purpose, 32));
  }

  /** Seals `plain` for the row named by `owner`. */
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
