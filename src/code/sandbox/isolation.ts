import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ProcessCommand } from './process.js';
import type { CodeLanguage, CodeLimits } from './types.js';

/**
 * 'namespace': each process in its own network and PID namespaces (the only setting for a server);
 * 'off': no namespaces, for tests of the runner on machines without them. Never chosen silently.
 */
export type NetworkIsolation = 'namespace' | 'off';

/** What starts a sandboxed node: the namespace launcher and the rlimit wrapper, as absolute paths. */
export interface Launcher {
  prefix: string[];
  nodeIsChild: boolean;
  /** Who the program runs as, said by the doctor's check. */
  user: string;
}

/** CPU seconds a process may spend loading its runtime, on top of the job's maximum (RLIMIT_CPU backstop). */
const STARTUP_CPU_SECONDS = 30;
/** WebAssembly memory the loaded runtime itself holds (Pyodide: ~30 MB), on top of the job's maximum. */
const RUNTIME_WASM_MB = 64;
/** V8 heap for the runtime's own JavaScript, on top of the job's maximum. */
const RUNTIME_HEAP_MB = 128;

const CHILD_DIR = fileURLToPath(new URL('./child/', import.meta.url));

/** Node 20's permission model is --experimental-permission; from Node 22 on it is --permission. */
export function permissionFlag(nodeVersion = process.versions.node): string {
  return Number(nodeVersion.split('.')[0]) >= 22 ? '--permission' : '--experimental-permission';
}

function findExecutable(name: string): string | null {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const candidate = path.join(dir || '.', name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

function packageRoot(resolvedFile: string, name: string): string {
  for (let dir = path.dirname(resolvedFile); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && JSON.parse(fs.readFileSync(manifest, 'utf8')).name === name) return fs.realpathSync(dir);
  }
  throw new Error(`cannot find the package folder of ${name}`);
}

interface Runtime {
  script: string;
  /** Folders the child may read: its own scripts and its runtime's packages, nothing else. */
  readable: string[];
  args: string[];
}

/** The child script of a language, the folders it reads and what it is told on its command line. */
function runtimeOf(language: CodeLanguage): Runtime {
  const require = createRequire(import.meta.url);
  const childDir = fs.realpathSync(CHILD_DIR);
  if (language === 'python') {
    const pyodide = packageRoot(require.resolve('pyodide'), 'pyodide');
    return {
      script: path.join(childDir, 'python.mjs'),
      readable: [childDir, pyodide],
      args: [pathToFileURL(path.join(pyodide, 'pyodide.mjs')).href, `${pyodide}/`],
    };
  }
  const core = packageRoot(require.resolve('quickjs-emscripten-core'), 'quickjs-emscripten-core');
  const variant = packageRoot(require.resolve('@jitl/quickjs-wasmfile-release-sync'), '@jitl/quickjs-wasmfile-release-sync');
  const ffiTypes = packageRoot(
    createRequire(path.join(core, 'package.json')).resolve('@jitl/quickjs-ffi-types'),
    '@jitl/quickjs-ffi-types',
  );
  return {
    script: path.join(childDir, 'javascript.mjs'),
    readable: [childDir, core, variant, ffiTypes],
    args: [pathToFileURL(path.join(core, 'dist/index.mjs')).href, pathToFileURL(path.join(variant, 'dist/index.mjs')).href],
  };
}

/**
 * The command line of a sandboxed process: the launcher (namespaces), prlimit (CPU backstop, no core
 * files, no file writes), then node under the permission model reading only its runtime's files.
 */
export function commandFor(language: CodeLanguage, launcher: Launcher, maxima: CodeLimits): ProcessCommand {
  const runtime = runtimeOf(language);
  const prlimit = [`--cpu=${Math.ceil(maxima.cpuMs / 1000) + STARTUP_CPU_SECONDS}`, '--core=0', '--fsize=0', '--'];
  const node = [
    process.execPath,
    permissionFlag(),
    ...runtime.readable.map((dir) => `--allow-fs-read=${dir}/`),
    '--no-warnings',
    `--max-old-space-size=${maxima.memoryMb + RUNTIME_HEAP_MB}`,
    `--wasm-max-mem-pages=${Math.min(65536, (maxima.memoryMb + RUNTIME_WASM_MB) * 16)}`,
    '--import',
    pathToFileURL(path.join(path.dirname(runtime.script), 'preload.mjs')).href,
    runtime.script,
    ...runtime.args,
  ];
  const [file, ...args] = [...launcher.prefix, ...prlimit, ...node];
  return { file, args, nodeIsChild: launcher.nodeIsChild };
}

/**
 * The check the probe runs inside the launcher: no network interface but loopback, a PID namespace of
 * its own, and the runtime's folders readable by the user it runs as (argv[1]: their list, JSON).
 */
const PROBE_SCRIPT = `
const others = Object.keys(require('node:os').networkInterfaces()).filter((name) => name !== 'lo');
if (others.length > 0) { console.error('network interfaces are visible: ' + others.join(', ')); process.exit(3); }
if (process.pid !== 1) { console.error('the process is not in a PID namespace of its own'); process.exit(4); }
for (const dir of JSON.parse(process.argv[1])) {
  try { require('node:fs').accessSync(dir, require('node:fs').constants.R_OK | require('node:fs').constants.X_OK); }
  catch (error) { console.error('uid ' + process.getuid() + ' cannot read ' + dir + ' (' + error.code + ')'); process.exit(5); }
}
`;

const firstLine = (text: string) => text.split('\n')[0];

function run(file: string, args: string[]): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env: {}, cwd: '/', timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ ok: !error, output: `${stderr}${stdout}`.trim() || (error?.message ?? '') });
    });
  });
}

/** The folders every sandboxed process reads (both languages' child scripts and runtime packages). */
export function runtimeFolders(): string[] {
  return [...new Set([...runtimeOf('python').readable, ...runtimeOf('javascript').readable])];
}

/** The unprivileged user a server started as root runs sandboxed code as (nobody). */
const SANDBOX_UID = 65534;

/**
 * Whether sandboxed processes can be started here, tried once: on Linux, unshare (as root: network and
 * PID namespaces, then setpriv down to nobody; otherwise in a user namespace too) and prlimit, the
 * namespace really empty of network interfaces and the runtime's folders readable there. The reason
 * says what failed; there is no fallback to less isolation.
 */
export async function probeLauncher(network: NetworkIsolation, readable: string[]): Promise<{ launcher: Launcher } | { reason: string }> {
  if (process.platform !== 'linux') return { reason: `code execution needs Linux (namespaces, /proc); this is ${process.platform}` };
  const prlimit = findExecutable('prlimit');
  if (!prlimit) return { reason: 'prlimit (util-linux) is not installed' };
  const launcher: Launcher = { prefix: [prlimit], nodeIsChild: false, user: "the server's user, no namespaces (tests only)" };
  if (network === 'namespace') {
    const unshare = findExecutable('unshare');
    if (!unshare) return { reason: 'unshare (util-linux) is not installed: no network namespace for the sandbox' };
    const namespaces = ['--net', '--pid', '--fork', '--kill-child', '--'];
    const probe = (prefix: string[]) =>
      run(unshare, [
        ...prefix.slice(1),
        '--core=0',
        '--',
        process.execPath,
        permissionFlag(),
        ...readable.map((dir) => `--allow-fs-read=${dir}/`),
        // The V8 flags the jobs' processes get: one this Node does not know is found here, not at every job.
        '--max-old-space-size=256',
        '--wasm-max-mem-pages=4096',
        '--no-warnings',
        '-e',
        PROBE_SCRIPT,
        JSON.stringify(readable),
      ]);
    if (process.getuid?.() !== 0) {
      const prefix = [unshare, '--user', '--map-root-user', ...namespaces, prlimit];
      const tried = await probe(prefix);
      if (!tried.ok)
        return {
          reason: `cannot isolate the sandbox: unshare --user --net --pid (unprivileged user namespaces): ${firstLine(tried.output)}`,
        };
      return { launcher: { prefix, nodeIsChild: true, user: "the server's user, as root of a user namespace" } };
    }
    // Root needs no user namespace for the namespaces, and the program should not run as root: nobody
    // it is, when nobody can run node and read the runtime (a checkout or a Node under /root cannot be);
    // else root stripped of every capability, which the doctor's check names.
    const setpriv = findExecutable('setpriv');
    if (!setpriv) return { reason: 'setpriv (util-linux) is not installed: the sandbox would run as root with its capabilities' };
    const asNobody = [setpriv, `--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_UID}`, '--clear-groups', '--no-new-privs', '--'];
    const nobody = [unshare, ...namespaces, ...asNobody, prlimit];
    const triedNobody = await probe(nobody);
    if (triedNobody.ok) return { launcher: { prefix: nobody, nodeIsChild: true, user: `nobody (uid ${SANDBOX_UID})` } };
    const noCapabilities = [setpriv, '--inh-caps=-all', '--ambient-caps=-all', '--bounding-set=-all', '--no-new-privs', '--'];
    const root = [unshare, ...namespaces, ...noCapabilities, prlimit];
    const triedRoot = await probe(root);
    if (!triedRoot.ok) return { reason: `cannot isolate the sandbox: unshare --net --pid, setpriv: ${firstLine(triedRoot.output)}` };
    return {
      launcher: {
        prefix: root,
        nodeIsChild: true,
        user: `root without capabilities (nobody cannot run it: ${firstLine(triedNobody.output)})`,
      },
    };
  }
  return { launcher };
}
