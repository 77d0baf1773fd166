// The harness's child processes, shared by bench/run.js and the experiments: starting a server on a
// free port and waiting until it answers, and reading a process's CPU time and RSS from /proc.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {net.AddressInfo} */ (srv.address());
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/**
 * Work to undo at the end of a run (servers, databases, folders), last in first out; also run on
 * SIGINT/SIGTERM, so an interrupted run leaves nothing behind. A failing step is logged, not thrown.
 */
export function cleanupStack(log, signalMessage) {
  const steps = [];
  const run = async () => {
    while (steps.length) {
      try {
        await steps.pop()();
      } catch (err) {
        log(`cleanup: ${err.message}`);
      }
    }
  };
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      log(`${signal}: ${signalMessage}`);
      void run().then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
  return { steps, run };
}

/**
 * Starts `node <args>` (or `command <args>`: a wrapper such as valgrind) and waits until `readyPath`
 * answers 2xx. Output is kept for error reports.
 */
export async function startChild(name, args, env, readyPath, { command = process.execPath, readyTimeoutMs = 30_000 } = {}) {
  const port = await freePort();
  const spawnedAt = Date.now();
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (d) => {
    output += d;
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited early (${child.exitCode}):\n${output}`);
    try {
      const res = await fetch(url + readyPath);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name} did not start within ${readyTimeoutMs / 1000} s:\n${output}`);
    await sleep(100);
  }
  return {
    name,
    url,
    pid: child.pid,
    spawnedAt,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', (code) => {
          clearTimeout(timer);
          resolve(code);
        });
        child.kill('SIGTERM');
      }),
  };
}

export const CLK_TCK = 100; // Linux USER_HZ; /proc/<pid>/stat counts CPU time in these ticks

/** A process's resident set in KiB; null once it has exited. */
export function readRssKb(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** A process's CPU time in ticks, from the text of its /proc/<pid>/stat. */
export function cpuTicksOfStat(stat) {
  // After the command name, which may itself hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14 and 15 of stat)
}

/** A process's CPU time in ticks (CLK_TCK a second); null once it has exited. */
export function readCpuTicks(pid) {
  try {
    return cpuTicksOfStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** The CPU time, in ticks, of a process's children that have ended and been waited for (cutime + cstime). */
export function readChildCpuTicks(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[13]) + Number(fields[14]); // cutime + cstime (fields 16 and 17 of stat)
  } catch {
    return null;
  }
}

/** A process's descendants (children, theirs, ...), from /proc; those that ended meanwhile are left out. */
export function descendantPids(pid) {
  const found = [];
  const walk = (parent) => {
    let children = [];
    try {
      children = fs.readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {}
    for (const child of children) {
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}
