import { SecretBox, isSealedBox } from './secret-box.js';

/**
 * Private keys at rest: the sealed box of secret-box.ts under its own purpose. The owner binds a
 * ciphertext to its row (e.g. `agent-key:<kid>`), so ciphertexts cannot be swapped between rows unnoticed.
 */

const PURPOSE = 'private-keys';

class DecryptionError extends Error {}

export function seal(masterKey: Buffer, plaintext: string, aad: string): string {
  return new SecretBox(masterKey, PURPOSE).seal(plaintext, aad);
}

export function open(masterKey: Buffer, sealed: string, aad: string): string {
  if (!isSealedBox(sealed)) throw new DecryptionError('unknown encrypted key format');
  const plain = new SecretBox(masterKey, PURPOSE).open(sealed, aad);
  // Never include key material; the usual cause is a different MASTER_KEY.
  if (plain === null) {
    throw new DecryptionError(
      `cannot decrypt a stored private key (${aad}): MASTER_KEY (or DATA_DIR/master.key) differs from the one that encrypted it`,
    );
  }
  return plain;
}
