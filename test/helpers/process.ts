import { spawn, execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
export const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * A bash function the docs' tests define before running a page's commands: `npx agentry` runs the
 * checkout's built CLI, which is what the docs mean. npx itself would look the name up (in a copy of the
 * checkout, in the registry) or link the checkout into its cache (test/docs/npx.test.ts runs that path).
 */
export const NPX_AGENTRY = `npx() { if [ "$1" = agentry ]; then shift; node dist/cli.js "$@"; else command npx "$@"; fi; }`;

/** When the server's build and the console's were last written: a command that only uses the build leaves them as they were. */
export const buildStamps = () =>
  ['dist/cli.js', 'packages/console/dist/index.html'].map((file) => [file, fs.statSync(path.join(ROOT, file)).mtimeMs]);

/** Runs the built CLI (`dist/cli.js`) as a real process. */
export async function cli(args: string[], env: Record<string, string | undefined>) {
  try {
    const { stdout, stderr } = await exec(process.execPath, [path.join(ROOT, 'dist/cli.js'), ...args], {
      env: { ...process.env, ...env },
      cwd: ROOT,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Where the kernel picks the local port of an outgoing connection (and of `listen(0)`). */
const EPHEMERAL = (() => {
  try {
    const [low] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low > 11_000) return low;
  } catch {
    // not Linux
  }
  return 32_768;
})();

/**
 * A port nothing listens on, for a server the test starts later. Drawn below the ephemeral range: a
 * port the kernel hands out (`listen(0)`) can become the local end of any outgoing connection on the
 * machine before the server binds it, and the server then fails with EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * (EPHEMERAL - 10_000));
    const free = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
    if (attempt === 50) throw new Error('no free port below the ephemeral range');
  }
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts the built server (`dist/main.js`) and waits until /healthz answers. */
export async function startServer(env: Record<string, string | undefined>): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerOn(await freePort(), env);
    } catch (err) {
      // Another test drew the same port in the meantime: draw again.
      if (!(err instanceof PortTaken) || attempt === 3) throw err;
    }
  }
}

class PortTaken extends Error {}

async function startServerOn(port: number, env: Record<string, string | undefined>): Promise<ServerProcess> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/main.js')], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env, PORT: String(port), HOST: '127.0.0.1' },
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  // A generous limit: a loaded machine (CI, other suites) can take many seconds to start Node.
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) {
      const message = `server exited early (${child.exitCode}): ${out}`;
      throw out.includes(`EADDRINUSE: address already in use 127.0.0.1:${port}`) ? new PortTaken(message) : new Error(message);
    }
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    child,
    output: () => out,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      }),
  };
}
