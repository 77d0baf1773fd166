import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type CodeLimits, createCodeSandbox, type LocalCodeSandbox } from '../../src/code/sandbox/index.js';
import { commandFor, permissionFlag, probeLauncher, runtimeFolders } from '../../src/code/sandbox/isolation.js';
import { SandboxProcess } from '../../src/code/sandbox/process.js';
import { makePythonSnapshot } from '../../src/code/sandbox/snapshot.js';

// The runner itself, process-level: no database, no HTTP (the code domain's tests drive it through the API).
// Limits are generous so that a loaded machine never decides an outcome.
const limits: CodeLimits = {
  wallMs: 120_000,
  cpuMs: 60_000,
  memoryMb: 256,
  outputBytes: 64 * 1024,
  maxOutputFiles: 20,
  maxOutputFileBytes: 1024 * 1024,
};
const text = (value: string) => new TextEncoder().encode(value);
const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

let sandbox: LocalCodeSandbox;
const warnings: string[] = [];
beforeAll(async () => {
  sandbox = await createCodeSandbox({ maxima: limits, poolSize: 1, maxConcurrent: 2, onWarning: (message) => warnings.push(message) });
});
afterAll(async () => {
  await sandbox?.close();
});

test('the sandbox can isolate here (Linux, namespaces): the escape tests below are not vacuous', () => {
  expect(sandbox.availability()).toEqual({ available: true });
});

test('Node 20 takes --experimental-permission, Node 22 and later --permission', () => {
  expect(permissionFlag('20.20.2')).toBe('--experimental-permission');
  expect(permissionFlag('22.12.0')).toBe('--permission');
  expect(permissionFlag('24.1.0')).toBe('--permission');
});

describe('python', () => {
  test('argv, cwd /output, files in and out, stdout and stderr', async () => {
    const result = await sandbox.run({
      language: 'python',
      code: [
        'import os, sys',
        'print("argv", sys.argv)',
        'print("cwd", os.getcwd())',
        'print("file", __file__, __name__)',
        'print("input", open("/input/data/numbers.txt").read().split())',
        'print("skill", open("/skill/README.md").read())',
        'open("report.txt", "w").write("total=6")',
        'os.makedirs("/output/nested", exist_ok=True)',
        'open("/output/nested/rows.csv", "w").write("a,b\\n1,2\\n")',
        'print("warning", file=sys.stderr)',
      ].join('\n'),
      scriptPath: '/skill/scripts/main.py',
      args: ['--flag', 'value with spaces'],
      skillFiles: [{ path: 'README.md', content: text('the skill') }],
      inputFiles: [{ path: 'data/numbers.txt', content: text('1 2 3') }],
      limits,
    });
    expect(result.limit).toBeUndefined();
    expect(result.exitCode).toBe(0);
    expect(result.stdout.split('\n')).toEqual([
      "argv ['/skill/scripts/main.py', '--flag', 'value with spaces']",
      'cwd /output',
      'file /skill/scripts/main.py __main__',
      "input ['1', '2', '3']",
      'skill the skill',
      '',
    ]);
    expect(result.stderr).toBe('warning\n');
    expect(result.files.map((file) => [file.path, file.mediaType, decode(file.content)])).toEqual([
      ['nested/rows.csv', 'text/csv', 'a,b\n1,2\n'],
      ['report.txt', 'text/plain', 'total=6'],
    ]);
  });

  test('/skill and /input are read-only', async () => {
    const result = await sandbox.run({
      language: 'python',
      code: [
        'for path in ["/input/a.txt", "/skill/s.txt", "/input/new.txt", "/skill/new.txt"]:',
        '    try:',
        '        open(path, "w").write("changed")',
        '        print("wrote", path)',
        '    except OSError as error:',
        '        print("refused", path, type(error).__name__)',
        'print(open("/input/a.txt").read(), open("/skill/s.txt").read())',
      ].join('\n'),
      skillFiles: [{ path: 's.txt', content: text('s') }],
      inputFiles: [{ path: 'a.txt', content: text('a') }],
      limits,
    });
    expect(result.stdout).toBe(
      [
        'refused /input/a.txt PermissionError',
        'refused /skill/s.txt PermissionError',
        'refused /input/new.txt PermissionError',
        'refused /skill/new.txt PermissionError',
        'a s',
        '',
      ].join('\n'),
    );
  });

  test('sys.exit(n) is the exit code; an uncaught exception is 1, its type and message, the traceback in stderr', async () => {
    const exited = await sandbox.run({ language: 'python', code: 'import sys\nprint("bye")\nsys.exit(3)', limits });
    expect(exited).toMatchObject({ exitCode: 3, stdout: 'bye\n' });
    expect(exited.exception).toBeUndefined();

    const failed = await sandbox.run({
      language: 'python',
      code: 'def parse(value):\n    raise ValueError(f"not a number: {value}")\nparse("x")',
      scriptPath: '/skill/scripts/parse.py',
      limits,
    });
    expect(failed.exitCode).toBe(1);
    expect(failed.exception).toBe('ValueError: not a number: x');
    expect(failed.limit).toBeUndefined();
    expect(failed.stderr).toContain('File "/skill/scripts/parse.py", line 3, in <module>');
    expect(failed.stderr).toContain('ValueError: not a number: x');
    // The runner's own frame is left out of the program's traceback.
    expect(failed.stderr).not.toContain('_agentry_run');
  });

  test('output past outputBytes is dropped and flagged, the program not killed', async () => {
    const result = await sandbox.run({
      language: 'python',
      code: 'import sys\nprint("x" * 10000)\nprint("e" * 300, file=sys.stderr)\nprint("done", file=sys.stderr)',
      limits: { ...limits, outputBytes: 100 },
    });
    expect(result.limit).toBeUndefined();
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('x'.repeat(100));
    expect(result.stdoutTruncated).toBe(true);
    expect(result.stderr).toBe('e'.repeat(100));
    expect(result.stderrTruncated).toBe(true);
  });

  test('a process runs one job: nothing a job leaves (globals, files, modules) is seen by the next', async () => {
    const first = await sandbox.run({
      language: 'python',
      code: 'import builtins, sys\nbuiltins.left_behind = "tenant A"\nopen("/tmp/left.txt", "w").write("A")\nsys.modules["json"].left = 1',
      limits,
    });
    expect(first.exitCode).toBe(0);
    const second = await sandbox.run({
      language: 'python',
      code: [
        'import builtins, json, os',
        'print(hasattr(builtins, "left_behind"), os.path.exists("/tmp/left.txt"), hasattr(json, "left"))',
      ].join('\n'),
      limits,
    });
    expect(second.stdout).toBe('False False False\n');
  });

  test('processes start from the runtime’s snapshot, made once by a process of the sandbox', async () => {
    const result = await sandbox.run({ language: 'python', code: 'import sys\nprint(sys.version_info[0])', limits });
    expect(result.stdout).toBe('3\n');
    expect(await sandbox.pythonStartsFrom()).toBe('snapshot');
    expect(warnings).toEqual([]);
  });

  test('without a snapshot a process starts the runtime itself; a snapshot that cannot be made says why', async () => {
    const launched = await probeLauncher('namespace', runtimeFolders());
    if (!('launcher' in launched)) throw new Error(launched.reason);
    const command = commandFor('python', launched.launcher, limits);
    const plain = new SandboxProcess(command, { outputCeilingBytes: 1024 * 1024, startupTimeoutMs: 120_000 }, Promise.resolve(null));
    expect((await plain.run({ language: 'python', code: 'print(6 * 7)', limits }, limits)).stdout).toBe('42\n');
    const failing = { file: process.execPath, args: ['-e', 'console.error("no runtime here"); process.exit(2)'], nodeIsChild: false };
    expect(await makePythonSnapshot(failing, 30_000)).toEqual({ reason: 'exit code 2: no runtime here' });
  });

  test('the store skill invoice-reconciliation runs as it is on two CSVs at /input', async () => {
    const script = fs.readFileSync(
      path.join(import.meta.dirname, '../../src/skills/store-catalog/invoice-reconciliation/scripts/match_invoices.py'),
      'utf8',
    );
    const invoices = [
      'id,reference,counterparty,date,amount,currency',
      'INV-1,INV-00042,Acme Ltd.,2026-11-01,120.50,EUR',
      'INV-2,INV-0043,Globex GmbH,2026-11-02,99.99,USD',
      'INV-3,,Initech LLC,2026-11-03,300.00,EUR',
      'INV-4,INV-0099,Umbrella plc,2026-11-04,50.00,EUR',
    ].join('\n');
    const payments = [
      'id,reference,counterparty,date,amount,currency',
      'PAY-1,INV42,ACME,2026-11-05,120.50,eur',
      'PAY-2,inv-43,Globex,2026-11-06,100.00,USD',
      'PAY-3,,Initech,2026-11-08,300.00,EUR',
      'PAY-4,XYZ-1,Nobody,2026-11-09,10.00,EUR',
    ].join('\n');
    const result = await sandbox.run({
      language: 'python',
      code: script,
      scriptPath: '/skill/scripts/match_invoices.py',
      args: ['/input/invoices.csv', '/input/payments.csv'],
      skillFiles: [{ path: 'scripts/match_invoices.py', content: text(script) }],
      inputFiles: [
        { path: 'invoices.csv', content: text(invoices) },
        { path: 'payments.csv', content: text(payments) },
      ],
      limits,
    });
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout.split(/\r?\n/)).toEqual([
      'pass,invoice,payment,difference',
      '1,INV-1,PAY-1,0.00',
      '2,INV-2,PAY-2,0.01',
      '3,INV-3,PAY-3,0.00',
      '',
      'unmatched_invoice,amount,currency',
      'INV-4,50.00,EUR',
      '',
      'unmatched_payment,amount,currency,ambiguous_candidates',
      'PAY-4,10.00,EUR,',
      '',
    ]);
  });

  test('the invoice script on two 1,000-row CSVs: every payment matched, by the pass its data calls for', async () => {
    const script = fs.readFileSync(
      path.join(import.meta.dirname, '../../src/skills/store-catalog/invoice-reconciliation/scripts/match_invoices.py'),
      'utf8',
    );
    const header = 'id,reference,counterparty,date,amount,currency';
    const invoices = [header];
    const payments = [header];
    for (let i = 1; i <= 1000; i++) {
      const cents = 1000 + i * 7;
      invoices.push(`INV-${i},INV-${String(i).padStart(5, '0')},Customer ${i} Ltd,2026-10-01,${(cents / 100).toFixed(2)},EUR`);
      // Every tenth payment is a cent short (pass 2: within tolerance); the rest are exact (pass 1).
      const paid = i % 10 === 0 ? cents - 1 : cents;
      payments.push(`PAY-${i},INV${i},Customer ${i},2026-10-05,${(paid / 100).toFixed(2)},EUR`);
    }
    const result = await sandbox.run({
      language: 'python',
      code: script,
      scriptPath: '/skill/scripts/match_invoices.py',
      args: ['/input/invoices.csv', '/input/payments.csv'],
      inputFiles: [
        { path: 'invoices.csv', content: text(invoices.join('\n')) },
        { path: 'payments.csv', content: text(payments.join('\n')) },
      ],
      limits,
    });
    expect(result.limit).toBeUndefined();
    expect(result.exitCode).toBe(0);
    const lines = result.stdout.split(/\r?\n/);
    const matches = lines.slice(1, lines.indexOf(''));
    expect(matches).toHaveLength(1000);
    expect(matches.filter((line) => line.startsWith('1,'))).toHaveLength(900);
    expect(matches.filter((line) => line.startsWith('2,'))).toHaveLength(100);
    expect(matches).toContain('2,INV-10,PAY-10,-0.01');
    expect(matches).toContain('1,INV-1,PAY-1,0.00');
    // Nothing left unmatched: each unmatched section holds its header only.
    expect(lines.slice(lines.indexOf('') + 1)).toEqual([
      'unmatched_invoice,amount,currency',
      '',
      'unmatched_payment,amount,currency,ambiguous_candidates',
      '',
    ]);
  });
});

describe('javascript', () => {
  test('console, scriptArgs, the fs API over /input and /output, promises', async () => {
    const result = await sandbox.run({
      language: 'javascript',
      code: [
        'console.log("args", scriptArgs, scriptPath);',
        'const rows = fs.readFile("/input/rows.csv").trim().split("\\n");',
        'console.log("rows", rows.length, fs.readdir("/input"), fs.exists("/input/rows.csv"), fs.exists("/input/none"));',
        'console.log("skill", fs.readFile("/skill/notes.md"));',
        'fs.writeFile("/output/summary.json", JSON.stringify({ rows: rows.length, café: "é" }));',
        'fs.writeFile("/output/raw.bin", new Uint8Array([0, 255, 7]));',
        'console.error("to stderr", { a: 1 });',
        'Promise.resolve(41).then((n) => console.log("then", n + 1));',
      ].join('\n'),
      scriptPath: '/skill/scripts/summarize.js',
      args: ['one', 'two'],
      skillFiles: [{ path: 'notes.md', content: text('notes') }],
      inputFiles: [{ path: 'rows.csv', content: text('a\nb\nc\n') }],
      limits,
    });
    expect(result.limit).toBeUndefined();
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(
      ['args ["one","two"] /skill/scripts/summarize.js', 'rows 3 ["rows.csv"] true false', 'skill notes', 'then 42', ''].join('\n'),
    );
    expect(result.stderr).toBe('to stderr {"a":1}\n');
    const files = Object.fromEntries(result.files.map((file) => [file.path, file]));
    expect(JSON.parse(decode(files['summary.json'].content))).toEqual({ rows: 3, café: 'é' });
    expect(files['summary.json'].mediaType).toBe('application/json');
    expect([...files['raw.bin'].content]).toEqual([0, 255, 7]);
  });

  test('/input and /skill are read-only; an uncaught error is exit 1 with its name and message', async () => {
    const result = await sandbox.run({
      language: 'javascript',
      code: [
        'for (const target of ["/input/a.txt", "/skill/x.js", "/tmp/x"]) {',
        '  try { fs.writeFile(target, "changed"); console.log("wrote", target); }',
        '  catch (error) { console.log("refused", target); }',
        '}',
        'console.log(fs.readFile("/input/a.txt"));',
        'null.property;',
      ].join('\n'),
      inputFiles: [{ path: 'a.txt', content: text('a') }],
      limits,
    });
    expect(result.stdout).toBe('refused /input/a.txt\nrefused /skill/x.js\nrefused /tmp/x\na\n');
    expect(result.exitCode).toBe(1);
    expect(result.exception).toMatch(/^TypeError: /);
    expect(result.stderr).toContain('Uncaught TypeError');
    expect(result.limit).toBeUndefined();
  });
});

test('a cancelled job is killed and reported code_cancelled, and the next job runs', async () => {
  const controller = new AbortController();
  const running = sandbox.run({ language: 'python', code: 'while True: pass', limits, signal: controller.signal });
  // Whether the abort lands before, during or after the start, the outcome is the same.
  setTimeout(() => controller.abort(), 200);
  const result = await running;
  expect(result.exitCode).toBeNull();
  expect(result.limit?.code).toBe('code_cancelled');
  const next = await sandbox.run({ language: 'python', code: 'print(6 * 7)', limits });
  expect(next.stdout).toBe('42\n');
});

test('a job asking more than the server maxima runs within the maxima', async () => {
  const result = await sandbox.run({
    language: 'python',
    code: 'print("x" * 100000)',
    limits: { ...limits, outputBytes: limits.outputBytes * 100 },
  });
  expect(result.stdout).toHaveLength(limits.outputBytes);
  expect(result.stdoutTruncated).toBe(true);
});

test('when isolation cannot be set up, availability says why and run refuses (code_unavailable)', async () => {
  const saved = process.env.PATH;
  // Neither unshare nor prlimit can be found: no silent fallback to running without them.
  process.env.PATH = '/nonexistent';
  let unavailable: LocalCodeSandbox;
  try {
    unavailable = await createCodeSandbox({ maxima: limits, poolSize: 1, maxConcurrent: 1 });
  } finally {
    process.env.PATH = saved;
  }
  const availability = unavailable.availability();
  expect(availability.available).toBe(false);
  expect(availability.available === false && availability.reason).toMatch(/prlimit|unshare/);
  const result = await unavailable.run({ language: 'python', code: 'print(1)', limits });
  expect(result.limit?.code).toBe('code_unavailable');
  expect(result.exitCode).toBeNull();
  await unavailable.close();
});

test('a runtime that dies before it is ready ends its job as code_crashed, saying what it printed', async () => {
  // Not the sandbox's command: a node that prints and leaves at once, as a runtime failing to load would.
  // (Its output used to be left unread, so the process never counted as closed and the job never ended.)
  const dying = new SandboxProcess(
    {
      file: process.execPath,
      args: ['-e', 'console.log("x".repeat(100000)); console.error("cannot load the runtime"); process.exit(3)'],
      nodeIsChild: false,
    },
    { outputCeilingBytes: 1024 * 1024, startupTimeoutMs: 120_000 },
  );
  const result = await dying.run({ language: 'python', code: 'print(1)', limits }, limits);
  expect(result.exitCode).toBeNull();
  expect(result.limit?.code).toBe('code_crashed');
  expect(result.limit?.message).toMatch(/^the runtime exited before it was ready \(exit code 3\): .*cannot load the runtime$/);
});

test('in a process with nothing else to do (a CLI: agentry doctor), a job and close() finish, warm processes and all', async () => {
  // The built sandbox (dist/) in a node of its own: an idle warm process does not keep a process alive,
  // but awaiting its end in close() must (it used to exit 13, "unsettled top-level await", mid-close).
  const sandboxModule = path.join(import.meta.dirname, '../../dist/code/sandbox/index.js');
  const script = [
    `import { createCodeSandbox } from ${JSON.stringify(sandboxModule)};`,
    `const limits = ${JSON.stringify(limits)};`,
    'const sandbox = await createCodeSandbox({ maxima: limits, poolSize: 1, maxConcurrent: 1 });',
    "const result = await sandbox.run({ language: 'javascript', code: 'console.log(6 * 7)', limits });",
    'await sandbox.close();',
    "console.log('closed after', JSON.stringify(result.stdout));",
  ].join('\n');
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
  expect(stdout).toBe('closed after "42\\n"\n');
});

/** Whether a user other than the owner can reach `target`: every folder on the way searchable, the target's `mode` bits. */
function othersCanReach(target: string, mode: number) {
  for (let dir = path.dirname(target); dir !== path.dirname(dir); dir = path.dirname(dir))
    if ((fs.statSync(dir).mode & 0o001) === 0) return false;
  return (fs.statSync(target).mode & mode) === mode;
}

test.skipIf(process.getuid?.() !== 0)(
  'under root: nobody runs the program, or root without capabilities where nobody cannot run the runtime',
  async () => {
    // Here: nobody when this Node and the runtime's folders are open to everyone (not so for a Node or a
    // checkout under /root, as in CI's Node 24 leg).
    const open = othersCanReach(process.execPath, 0o005) && runtimeFolders().every((dir) => othersCanReach(dir, 0o005));
    const here = await probeLauncher('namespace', runtimeFolders());
    if (open) expect('launcher' in here && here.launcher.user).toBe('nobody (uid 65534)');
    else expect('launcher' in here && here.launcher.user).toMatch(/^root without capabilities \(nobody cannot run it: /);
    // With a folder of the runtime only root may enter (a mktemp -d folder), never nobody.
    const privateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-private-'));
    try {
      const closed = await probeLauncher('namespace', [...runtimeFolders(), privateDir]);
      expect('launcher' in closed && closed.launcher.user).toMatch(/^root without capabilities \(nobody cannot run it: /);
      if (open) expect('launcher' in closed && closed.launcher.user).toContain(`uid 65534 cannot read ${privateDir} (EACCES)`);
      expect('launcher' in closed && closed.launcher.prefix).toContain('--bounding-set=-all');
    } finally {
      fs.rmSync(privateDir, { recursive: true, force: true });
    }
  },
);
