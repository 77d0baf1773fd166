import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PRIVATE_FILE_MODE, ensurePrivateDir, tightenFile } from '../private-files.js';

const MASTER_KEY_FILE = 'master.key';

/** Where the master key comes from: the configuration's (config.ts is one), or a file in the data folder. */
export interface MasterKeySource {
  masterKey?: { reveal(): Buffer } | undefined;
  dataDir: string;
}

/**
 * The key that encrypts private keys at rest: `MASTER_KEY` from the configuration, or else
 * `DATA_DIR/master.key`, generated (32 random bytes, base64, mode 0600, in a 0700 folder) on first start;
 * a key file or folder left readable by others is tightened.
 *
 * Creation is atomic and race-free: the key is written to a private temporary file that is then
 * hard-linked into place, which fails when another process got there first (its key is used then).
 * Replicas sharing a PostgreSQL database on different machines must all be given one `MASTER_KEY`.
 */
export function loadMasterKey(config: MasterKeySource): Buffer {
  if (config.masterKey) return config.masterKey.reveal();
  ensurePrivateDir(config.dataDir);
  const file = path.join(config.dataDir, MASTER_KEY_FILE);
  const existing = readKeyFile(file);
  if (existing) {
    tightenFile(file); // one an older version (or a copy) left readable
    return existing;
  }

  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, `${randomBytes(32).toString('base64')}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  try {
    fs.linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  const key = readKeyFile(file);
  if (!key) throw new Error(`${file} could not be created`);
  return key;
}

/**
 * The master key if there is one, never creating it (`agentry doctor`): the configuration's, or the
 * data folder's file; null when neither exists. A malformed file throws as `loadMasterKey` does.
 */
export function findMasterKey(config: MasterKeySource): { key: Buffer; from: 'MASTER_KEY' | 'file' } | null {
  if (config.masterKey) return { key: config.masterKey.reveal(), from: 'MASTER_KEY' };
  const key = readKeyFile(path.join(config.dataDir, MASTER_KEY_FILE));
  return key ? { key, from: 'file' } : null;
}

function readKeyFile(file: string): Buffer | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} must hold the base64 encoding of 32 bytes`);
  return key;
}
