import fs from 'node:fs';

/**
 * The data folder and the files in it (the SQLite database, its WAL and shared memory, master.key)
 * hold every tenant's data and the key that seals private keys: only the server's user may read
 * them. Modes are set explicitly, whatever the process umask, and tightened on existing
 * installations at start.
 */

const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates the folder (and missing parents) 0700, or tightens an existing one to 0700. */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  tighten(dir, PRIVATE_DIR_MODE);
}

/** Creates an empty file 0600 when it does not exist (so nothing else creates it readable first). */
export function createPrivateFile(file: string): void {
  fs.closeSync(fs.openSync(file, 'a', PRIVATE_FILE_MODE));
  tighten(file, PRIVATE_FILE_MODE);
}

/** Tightens an existing file to 0600; a missing one is left missing. */
export function tightenFile(file: string): void {
  tighten(file, PRIVATE_FILE_MODE);
}

function tighten(target: string, mode: number): void {
  let current: number;
  try {
    current = fs.statSync(target).mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (current === mode) return;
  try {
    fs.chmodSync(target, mode);
  } catch (err) {
    // Not ours to change (another user's folder we may write to): say so, and go on.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
    process.emitWarning(`${target} is mode ${current.toString(8)} and could not be made ${mode.toString(8)}: ${(err as Error).message}`);
  }
}
