import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Private keys at rest: AES-256-GCM under the master key. Stored form
 * `v1.<iv>.<tag>.<ciphertext>` (base64url). The additional authenticated data binds a ciphertext to
 * its row (e.g. `agent-key:<kid>`), so ciphertexts cannot be swapped between rows unnoticed.
 */

const VERSION = 'v1';

export class DecryptionError extends Error {}

export function seal(masterKey: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [VERSION, iv.toString('base64url'), tag.toString('base64url'), ciphertext.toString('base64url')].join('.');
}

export function open(masterKey: Buffer, sealed: string, aad: string): string {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new DecryptionError('unknown encrypted key format');
  try {
    const decipher = createDecipheriv('aes-256-gcm', masterKey, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    // Never include key material; the usual cause is a different MASTER_KEY.
    throw new DecryptionError(
      `cannot decrypt a stored private key (${aad}): MASTER_KEY (or DATA_DIR/master.key) differs from the one that encrypted it`,
    );
  }
}
