import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { type CodeLimits, type CodeResult, createCodeSandbox, type LocalCodeSandbox } from '../../src/code/sandbox/index.js';

// Programs that try to get out of the sandbox. Each asserts the attempt was contained (an error, or
// nothing reached) and, after it, that this process (standing in for the server) still runs a job.
// Limits are generous where they are not the subject, so that timing never decides an outcome.
const limits: CodeLimits = {
  wallMs: 120_000,
  cpuMs: 60_000,
  memoryMb: 256,
  outputBytes: 64 * 1024,
  maxOutputFiles: 20,
  maxOutputFileBytes: 1024 * 1024,
};

/** Python that reaches Node's `process` the way an attacker would: through any JS function's constructor. */
const REACH_PROCESS = [
  'from pyodide.ffi import to_js',
  'Function = to_js([]).constructor.constructor',
  'proc = Function("return process")()',
  'node = proc.getBuiltinModule',
  'def attempt(name, action):',
  '    try:',
  '        print(name, "REACHED", action())',
  '    except Exception as error:',
  '        print(name, "refused:", str(error).splitlines()[0][:160])',
  '',
].join('\n');

const secret = `fake-secret-${randomBytes(8).toString('hex')}`;
const hostDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-escape-'));
const hostFile = path.join(hostDir, 'server-secret.txt');
const marker = path.join(hostDir, 'pwned');
let sandbox: LocalCodeSandbox;
let listener: http.Server;
let listenerPort = 0;
let connections = 0;

beforeAll(async () => {
  // What the sandbox must not see: a secret in the server's environment and in a file of the server.
  process.env.AGENTRY_ESCAPE_TEST_SECRET = secret;
  fs.writeFileSync(hostFile, secret);
  sandbox = await createCodeSandbox({
    maxima: limits,
    poolSize: 1,
    maxConcurrent: 2,
    outputCeilingBytes: 8 * 1024 * 1024,
  });
  listener = http.createServer((_req, res) => res.end('reached'));
  listener.on('connection', () => connections++);
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  listenerPort = (listener.address() as { port: number }).port;
  // The listener can be reached from outside the sandbox: a count of zero below means something.
  expect(await (await fetch(`http://127.0.0.1:${listenerPort}/`)).text()).toBe('reached');
  connections = 0;
});

afterAll(async () => {
  delete process.env.AGENTRY_ESCAPE_TEST_SECRET;
  await sandbox?.close();
  await new Promise((resolve) => listener?.close(resolve));
  fs.rmSync(hostDir, { recursive: true, force: true });
});

afterEach(async () => {
  // Whatever the program tried, nothing appeared on the host, the secret stayed, the next job runs.
  expect(fs.existsSync(marker)).toBe(false);
  const next = await sandbox.run({ language: 'python', code: 'print(sum(range(10)))', limits });
  expect(next.stdout).toBe('45\n');
});

const python = (code: string, overrides: Partial<CodeLimits> = {}) =>
  sandbox.run({ language: 'python', code, limits: { ...limits, ...overrides } });
const javascript = (code: string, overrides: Partial<CodeLimits> = {}) =>
  sandbox.run({ language: 'javascript', code, limits: { ...limits, ...overrides } });

function expectNoSecret(result: CodeResult) {
  expect(result.stdout).not.toContain(secret);
  expect(result.stderr).not.toContain(secret);
}

/** The lines the program printed for each attempt, by name: "refused: ..." or "REACHED ...". */
function attempts(result: CodeResult): Record<string, string> {
  return Object.fromEntries(
    result.stdout
      .split('\n')
      .filter((line) => line.includes(' refused: ') || line.includes(' REACHED '))
      .map((line) => [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)]),
  );
}

describe('python reaching Node', () => {
  test('import js sees an empty object; pyodide_js is gone', async () => {
    const result = await python(
      [
        'import js',
        'print("process" in dir(js), "require" in dir(js))',
        'try:',
        '    import pyodide_js',
        '    print("pyodide_js REACHED")',
        'except ImportError as error:',
        '    print("pyodide_js refused")',
      ].join('\n'),
    );
    expect(result.stdout).toBe('False False\npyodide_js refused\n');
  });

  test('from process (reached through Function): child_process, workers, files, the server are refused', async () => {
    const result = await python(
      [
        REACH_PROCESS,
        'print("pid", proc.pid, "ppid", proc.ppid, "uid", proc.getuid())',
        `attempt("spawn", lambda: node("child_process").execSync("touch ${marker}"))`,
        `attempt("fork", lambda: node("child_process").fork("${marker}"))`,
        'attempt("worker", lambda: Function("return new (process.getBuiltinModule(\'worker_threads\').Worker)(\'1\', { eval: true })")())',
        'attempt("hostname", lambda: node("fs").readFileSync("/etc/hostname", "utf8"))',
        `attempt("serverfile", lambda: node("fs").readFileSync("${hostFile}", "utf8"))`,
        `attempt("serverenv", lambda: node("fs").readFileSync("/proc/${process.pid}/environ", "utf8"))`,
        'attempt("selfenv", lambda: node("fs").readFileSync("/proc/self/environ", "utf8"))',
        `attempt("source", lambda: node("fs").readFileSync("${path.resolve('package.json')}", "utf8"))`,
        `attempt("write", lambda: node("fs").writeFileSync("${marker}", "x"))`,
        'attempt("writetmp", lambda: node("fs").writeFileSync("/tmp/agentry-escape", "x"))',
        'attempt("addon", lambda: proc.dlopen(to_js({}), "/usr/lib/x86_64-linux-gnu/libc.so.6"))',
        'attempt("binding", lambda: proc.binding("spawn_sync"))',
        `attempt("signal", lambda: proc.kill(${process.pid}, "SIGKILL"))`,
      ].join('\n'),
    );
    expectNoSecret(result);
    // It did reach process: the containment below is the permission model's and the namespaces', not luck.
    // In a PID namespace of its own it is process 1, and the server is not there to signal.
    // A server started as root runs the program as nobody (or, where nobody cannot read the runtime, as a
    // root without capabilities); any other user is root only in its user namespace.
    const uid = sandbox.runsAs?.startsWith('nobody') ? 65534 : 0;
    expect(result.stdout).toContain(`pid 1 ppid 0 uid ${uid}`);
    const seen = attempts(result);
    for (const name of ['spawn', 'fork', 'worker', 'hostname', 'serverfile', 'serverenv', 'selfenv', 'source', 'write', 'writetmp']) {
      expect(seen[name], name).toMatch(/^refused: .*(Access to this API has been restricted|ERR_ACCESS_DENIED)/);
    }
    expect(seen.addon).toMatch(/^refused: /);
    expect(seen.binding).toMatch(/^refused: (Error: )?process.binding\('spawn_sync'\) is not available/);
    expect(seen.signal).toMatch(/^refused: .*ESRCH/);
    expect(fs.existsSync('/tmp/agentry-escape')).toBe(false);
  });

  test('the environment holds no secret of the server (Python and Node views)', async () => {
    const result = await python(
      [
        REACH_PROCESS,
        'import os',
        'print("environ", dict(os.environ))',
        'print("node env", node("node:util").inspect(proc.env))',
        'attempt("procenv", lambda: open("/proc/self/environ").read())',
      ].join('\n'),
    );
    expectNoSecret(result);
    expect(result.stdout).toContain('node env {}');
    expect(attempts(result).procenv).toMatch(/^refused: /);
  });
});

describe('python on its own', () => {
  test('os.system, posix.system, subprocess and fork start no process', async () => {
    for (const code of [
      `import os\nos.system("touch ${marker}")`,
      `import os\nos.popen("touch ${marker}")`,
      `import subprocess\nsubprocess.run(["touch", "${marker}"])`,
      'import os\nos.fork()',
    ]) {
      const result = await python(code);
      expect(result.exitCode, code).toBe(1);
      expect(result.exception, code).toMatch(/^(PermissionError|OSError)/);
    }
    // The raw call under os.system reaches child_process in Node: refused there, the runtime gives up.
    const raw = await python(`import posix\nposix.system("touch ${marker}")`);
    expect(raw.limit?.code).toBe('code_crashed');
    expect(raw.stderr).toContain('Access to this API has been restricted');
  });

  test('reading outside the mounts finds the in-memory file system only', async () => {
    const result = await python(
      [
        'def attempt(name, action):',
        '    try:',
        '        print(name, "REACHED", action())',
        '    except Exception as error:',
        '        print(name, "refused:", type(error).__name__)',
        'attempt("hostname", lambda: open("/etc/hostname").read())',
        `attempt("serverfile", lambda: open("${hostFile}").read())`,
        'attempt("procenv", lambda: open("/proc/self/environ").read())',
        `attempt("write", lambda: open("${marker}", "w").write("x"))`,
      ].join('\n'),
    );
    expectNoSecret(result);
    expect(attempts(result)).toEqual({
      hostname: 'refused: FileNotFoundError',
      serverfile: 'refused: FileNotFoundError',
      procenv: 'refused: FileNotFoundError',
      write: 'refused: FileNotFoundError',
    });
  });

  test('sockets, urllib and fetch never reach a listener on loopback', async () => {
    const url = `http://127.0.0.1:${listenerPort}/`;
    const socket = await python(`import socket\nsocket.create_connection(("127.0.0.1", ${listenerPort}), timeout=5)`);
    expect(socket.exception).toMatch(/^OSError: .*unreachable/i);
    const urllib = await python(`import urllib.request\nprint(urllib.request.urlopen("${url}", timeout=5).read())`);
    expect(urllib.exception).toMatch(/^URLError: .*unreachable/i);
    // fetch through Node, left pending when the program ends: the runner lets it settle before reporting.
    const fetched = await python(
      [
        REACH_PROCESS,
        `Function("fetch('${url}').then(() => console.log('REACHED'), (error) => console.log('fetch failed'))")()`,
        'attempt("interfaces", lambda: list(node("os").networkInterfaces().object_keys()))',
      ].join('\n'),
    );
    expect(fetched.stdout).toContain('fetch failed');
    expect(fetched.stdout).not.toContain('REACHED\n');
    // No network interface at all in its namespace, not even loopback up.
    expect(attempts(fetched).interfaces).toBe('REACHED []');
    expect(connections).toBe(0);
  });
});

describe('python against the limits', () => {
  test('an infinite loop is killed: code_cpu', async () => {
    const result = await python('while True:\n    pass', { cpuMs: 1000 });
    expect(result.exitCode).toBeNull();
    expect(result.limit?.code).toBe('code_cpu');
  });

  test('a program sleeping past its wall time is killed: code_timeout', async () => {
    const result = await python('import time\nprint("started", flush=True)\ntime.sleep(3600)', { wallMs: 2000 });
    expect(result.limit?.code).toBe('code_timeout');
    expect(result.exitCode).toBeNull();
  });

  test('a memory bomb is stopped: code_memory', async () => {
    const result = await python('chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 1024 * 1024))', {
      memoryMb: 128,
    });
    expect(result.limit?.code).toBe('code_memory');
  });

  test('1 GB of output is cut at the ceiling: code_output_limit, the server keeping only outputBytes', async () => {
    const before = process.memoryUsage().rss;
    const result = await python('import sys\nchunk = "x" * (1024 * 1024)\nfor _ in range(1024):\n    sys.stdout.write(chunk)');
    expect(result.limit?.code).toBe('code_output_limit');
    expect(result.stdout.length).toBeLessThanOrEqual(limits.outputBytes);
    expect(result.stdoutTruncated).toBe(true);
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
  });

  test('a file bomb in /output: code_files_limit, at most maxOutputFiles kept; an oversized file likewise', async () => {
    const many = await python('for i in range(5000):\n    open(f"/output/f{i:05}.txt", "w").write("x")');
    expect(many.limit?.code).toBe('code_files_limit');
    expect(many.files.length).toBeLessThanOrEqual(limits.maxOutputFiles);
    const large = await python('open("/output/big.bin", "wb").write(b"x" * (3 * 1024 * 1024))');
    expect(large.limit?.code).toBe('code_files_limit');
    expect(large.files).toEqual([]);
  });
});

describe('javascript', () => {
  test('no Node API: process, require, fetch are not there, not even through Function', async () => {
    const result = await javascript(
      [
        'console.log(typeof process, typeof require, typeof fetch, typeof globalThis.process);',
        'const viaFunction = (() => 0).constructor("return typeof process")();',
        'console.log(viaFunction, typeof std, typeof os);',
        'for (const target of ["/etc/hostname", "/input/../etc/hostname", "/proc/self/environ"]) {',
        '  try { fs.readFile(target); console.log("REACHED", target); } catch (error) { console.log("refused", target); }',
        '}',
      ].join('\n'),
    );
    expect(result.stdout).toBe(
      [
        'undefined undefined undefined undefined',
        'undefined undefined undefined',
        'refused /etc/hostname',
        'refused /input/../etc/hostname',
        'refused /proc/self/environ',
        '',
      ].join('\n'),
    );
  });

  test('an infinite loop: code_timeout', async () => {
    const result = await javascript('for (;;) {}', { wallMs: 2000 });
    expect(result.limit?.code).toMatch(/^code_(timeout|cpu)$/);
  });

  test('a memory bomb: code_memory', async () => {
    const result = await javascript('const kept = []; for (;;) kept.push(new Array(100000).fill(1));', { memoryMb: 64 });
    expect(result.limit?.code).toBe('code_memory');
  });

  test('1 GB of output: code_output_limit', async () => {
    const result = await javascript('const line = "x".repeat(1024 * 1024); for (let i = 0; i < 1024; i++) console.log(line);');
    expect(result.limit?.code).toBe('code_output_limit');
    expect(result.stdout.length).toBeLessThanOrEqual(limits.outputBytes);
  });

  test('a file bomb in /output: code_files_limit', async () => {
    const result = await javascript('for (let i = 0; i < 5000; i++) { try { fs.writeFile("/output/f" + i, "x"); } catch {} }');
    expect(result.limit?.code).toBe('code_files_limit');
    expect(result.files.length).toBe(limits.maxOutputFiles);
  });
});
