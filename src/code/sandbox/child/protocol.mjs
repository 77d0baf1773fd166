// The child's side of the protocol with src/code/sandbox/process.ts: the job arrives on stdin as a
// 4-byte big-endian length and that much JSON; the program's stdout and stderr go to fds 1 and 2 as
// they are written; control lines (JSON, one per line) go to fd 3: `ready` once the runtime is loaded,
// then one `result`. The parent trusts none of it beyond what it checks itself.
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

/** The job: the length-prefixed JSON on stdin. Resolves null when stdin closes first (pool shut down). */
export function readJob() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let received = 0;
    let expected = -1;
    const done = (value) => {
      process.stdin.removeAllListeners('data');
      process.stdin.destroy();
      resolve(value);
    };
    process.stdin.on('data', (chunk) => {
      chunks.push(chunk);
      received += chunk.length;
      if (expected < 0 && received >= 4) expected = Buffer.concat(chunks).readUInt32BE(0);
      if (expected >= 0 && received >= 4 + expected) {
        const all = Buffer.concat(chunks);
        done(JSON.parse(all.subarray(4, 4 + expected).toString('utf8')));
      }
    });
    process.stdin.on('end', () => done(null));
    process.stdin.on('error', reject);
  });
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
