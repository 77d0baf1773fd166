import { Capture, killGroup, type ProcessCommand, spawnSandboxed } from './process.js';

/** Pyodide's snapshot is ~31 MB; anything past this is not one. */
const MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024;

export type SnapshotResult = { snapshot: Uint8Array } | { reason: string };

/** What the maker writes to stderr, kept to say why it failed. */
const STDERR_BYTES = 4096;

/**
 * Python's memory right after Pyodide has started, made once by a process of the sandbox like any
 * job's (same isolation, no job): every later Python process restores it instead of starting the
 * runtime (~0.6 s of CPU, warm-up included, instead of ~3 s). It is handed to them on stdin, so no
 * file is shared with them.
 */
export function makePythonSnapshot(command: ProcessCommand, timeoutMs: number): Promise<SnapshotResult> {
  return new Promise((resolve) => {
    const child = spawnSandboxed(command, ['make-snapshot'], ['ignore', 'pipe', 'pipe']);
    const chunks: Buffer[] = [];
    let size = 0;
    const stderr = new Capture(STDERR_BYTES);
    let failure: string | undefined;
    const stop = (reason: string) => {
      failure ??= reason;
      killGroup(child);
    };
    const timer = setTimeout(() => stop(`it took longer than ${timeoutMs} ms`), timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_SNAPSHOT_BYTES) stop(`it wrote more than ${MAX_SNAPSHOT_BYTES} bytes`);
      else chunks.push(chunk);
    });
    child.stderr?.on('data', (chunk: Buffer) => stderr.add(chunk));
    child.on('error', (error) => stop(error.message));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const said = stderr.lastLines(3);
      if (failure) resolve({ reason: failure });
      else if (code !== 0 || size === 0) resolve({ reason: `${signal ?? `exit code ${code}`}${said ? `: ${said}` : ''}` });
      else resolve({ snapshot: Buffer.concat(chunks, size) });
    });
  });
}
