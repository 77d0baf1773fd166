// The child's side of the protocol with src/code/sandbox/process.ts: the job arrives on stdin as a
// 4-byte big-endian length and that much JSON (Python's child first gets its runtime's snapshot so);
// the program's stdout and stderr go to fds 1 and 2 as they are written; control lines (JSON, one per
// line) go to fd 3: `ready` once the runtime is loaded, then one `result`. The parent trusts none of it
// beyond what it checks itself.
import fs from 'node:fs';

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Writes all of `bytes` to `fd`, waiting while the pipe is full (fds may be non-blocking). */
export function writeAll(fd, bytes) {
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += fs.writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error;
      Atomics.wait(pause, 0, 0, 2);
    }
  }
}

export function sendControl(message) {
  writeAll(3, Buffer.from(`${JSON.stringify(message)}\n`));
}

/**
 * Length-prefixed frames on stdin (4-byte big-endian length, then that many bytes), in order: `next()`
 * resolves the next frame's bytes, or null once stdin has ended (the pool shut down).
 */
export function stdinFrames() {
  const chunks = [];
  let received = 0;
  let ended = false;
  let failure;
  let waiter;
  const settle = () => {
    if (!waiter) return;
    if (received >= 4) {
      const head = chunks[0].length >= 4 ? chunks[0] : Buffer.concat(chunks);
      const length = head.readUInt32BE(0);
      if (received >= 4 + length) {
        // Joined once the whole frame is in: a frame of megabytes arrives in many chunks.
        const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        const rest = all.subarray(4 + length);
        chunks.length = 0;
        if (rest.length > 0) chunks.push(rest);
        received = rest.length;
        const { resolve } = waiter;
        waiter = undefined;
        return resolve(all.subarray(4, 4 + length));
      }
    }
    if (failure || ended) {
      const { resolve, reject } = waiter;
      waiter = undefined;
      if (failure) reject(failure);
      else resolve(null);
    }
  };
  process.stdin.on('data', (chunk) => {
    chunks.push(chunk);
    received += chunk.length;
    settle();
  });
  process.stdin.on('end', () => {
    ended = true;
    settle();
  });
  process.stdin.on('error', (error) => {
    failure = error;
    settle();
  });
  return {
    next: () =>
      new Promise((resolve, reject) => {
        waiter = { resolve, reject };
        settle();
      }),
  };
}

/** The job: the next frame on stdin, JSON. Resolves null when stdin closes first (pool shut down). */
export async function readJob(frames = stdinFrames()) {
  const bytes = await frames.next();
  process.stdin.removeAllListeners('data');
  process.stdin.destroy();
  return bytes === null ? null : JSON.parse(bytes.toString('utf8'));
}

export function decodeFiles(files) {
  return (files ?? []).map((file) => ({ path: file.path, content: Buffer.from(file.content, 'base64') }));
}

/** What /output held ({ path, size, read() }), against the job's limits: the files kept and whether a limit was passed. */
export function keepOutputFiles(entries, limits) {
  const files = [];
  let limit;
  for (const entry of entries) {
    if (entry.size > limits.maxOutputFileBytes) {
      limit = { code: 'code_files_limit', message: `/output/${entry.path} is larger than ${limits.maxOutputFileBytes} bytes` };
      continue;
    }
    if (files.length >= limits.maxOutputFiles) {
      limit = { code: 'code_files_limit', message: `/output holds more than ${limits.maxOutputFiles} files` };
      break;
    }
    files.push({ path: entry.path, content: Buffer.from(entry.read()).toString('base64') });
  }
  return { files, limit };
}

/** Flushes fds and leaves: the process is used for one job only. */
export function finish(result) {
  sendControl({ type: 'result', ...result });
  process.exit(0);
}
