// One Python job in Pyodide, in a process of its own (src/code/sandbox/process.ts starts it under the
// permission model, in its own namespaces). argv: the file URL of pyodide.mjs, pyodide's folder, and
// `make-snapshot` for the process that makes the runtime's memory snapshot (src/code/sandbox/snapshot.ts).
import { decodeFiles, finish, keepOutputFiles, readJob, sendControl, stdinFrames, writeAll } from './protocol.mjs';

const [pyodideModule, indexURL, mode] = process.argv.slice(2);
const { loadPyodide } = await import(pyodideModule);

const stream = (fd) => ({
  write(bytes) {
    writeAll(fd, bytes);
    return bytes.length;
  },
});
const options = {
  indexURL,
  // `import js` sees this empty object, not globalThis (the isolation does not rest on it: any JS
  // function's constructor is Function; docs/code-execution.md).
  jsglobals: Object.create(null),
  env: { HOME: '/output', LANG: 'C.UTF-8' },
  stdin: () => null,
};
if (mode === 'make-snapshot') {
  // Python's memory once the runtime has started, before anything else: restoring it skips the start.
  const pyodide = await loadPyodide({ ...options, _makeSnapshot: true });
  writeAll(1, pyodide.makeMemorySnapshot());
  process.exit(0);
}
const frames = stdinFrames();
// The first frame on stdin: the snapshot the parent holds (restored and warmed in ~0.6 s of CPU instead
// of a ~3 s start), or nothing when it has none. Held in this function alone: its 31 MB are garbage once restored.
async function startRuntime() {
  const snapshot = await frames.next();
  if (snapshot === null) process.exit(0);
  if (snapshot.length === 0) return loadPyodide(options);
  const restored = await loadPyodide({ ...options, _loadSnapshot: snapshot });
  // A restored runtime's WebAssembly is not yet optimised where a started one's is (the start ran the
  // interpreter for seconds): a job's imports took 3-5 times as long. The interpreter is run here
  // instead, while the process waits in the pool: modules' code read and unmarshalled, not imported.
  restored.runPython(`
def _agentry_warm():
    import marshal, sys
    table = {}
    for i in range(100000):
        table[str(i)] = i * 2
    stdlib = next((sys.path_importer_cache.get(p) for p in sys.path if p.endswith(".zip")), None)
    for name in ("statistics", "argparse", "csv", "decimal", "typing", "dataclasses", "enum", "functools"):
        try:
            marshal.dumps(stdlib.get_code(name))
        except Exception:
            pass
_agentry_warm()
del _agentry_warm
`);
  return restored;
}
const pyodide = await startRuntime();
pyodide.setStdout(stream(1));
pyodide.setStderr(stream(2));
pyodide.unregisterJsModule('pyodide_js');
// os.system reaches Emscripten's system(), which Pyodide maps to child_process (refused by the permission
// model, a fatal error of the runtime): a program asking for a process gets a Python error instead.
pyodide.runPython(`
import os, sys
sys.modules.pop("pyodide_js", None)
def _no_processes(*args, **kwargs):
    raise PermissionError("the sandbox starts no processes")
os.system = os.popen = _no_processes
del os, sys, _no_processes
`);

// Runs the job as __main__ and reports how it ended; the traceback goes to stderr without this frame.
pyodide.runPython(`
def _agentry_run(source, path, args):
    import json, sys, traceback
    sys.argv = [path, *args]
    scope = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    status, exception = 0, None
    try:
        exec(compile(source, path, "exec"), scope)
    except SystemExit as exit:
        if exit.code is None:
            status = 0
        elif isinstance(exit.code, int):
            status = exit.code
        else:
            print(exit.code, file=sys.stderr)
            status = 1
    except BaseException as error:
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        status, exception = 1, f"{type(error).__name__}: {error}"[:2000]
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return json.dumps({"exitCode": status, "exception": exception})
`);
sendControl({ type: 'ready' });

const job = await readJob(frames);
if (job === null) process.exit(0);

const FS = pyodide.FS;
function mount(root, files, writable) {
  FS.mkdirTree(root);
  for (const file of files) {
    const full = `${root}/${file.path}`;
    FS.mkdirTree(full.slice(0, full.lastIndexOf('/')));
    FS.writeFile(full, file.content);
  }
  if (!writable) readOnly(root);
}
function readOnly(path) {
  const stat = FS.stat(path);
  if (FS.isDir(stat.mode)) {
    for (const name of FS.readdir(path)) if (name !== '.' && name !== '..') readOnly(`${path}/${name}`);
    FS.chmod(path, 0o555);
  } else FS.chmod(path, 0o444);
}
mount('/skill', decodeFiles(job.skillFiles), false);
mount('/input', decodeFiles(job.inputFiles), false);
mount('/output', [], true);
FS.chdir('/output');

const run = pyodide.globals.get('_agentry_run');
let ended;
try {
  ended = JSON.parse(run(job.code, job.scriptPath, pyodide.toPy(job.args)));
} catch (error) {
  // A fatal error of the runtime (the interpreter cannot go on), not the program's exception.
  writeAll(2, Buffer.from(`${error?.stack ?? error}\n`));
  ended = { exitCode: 1, exception: String(error?.message ?? error).slice(0, 2000), crashed: true };
}

/** /output's regular files, depth first, stopping one past the count limit (a file bomb is not walked whole). */
function outputEntries(limit) {
  const entries = [];
  const walk = (dir, prefix) => {
    for (const name of FS.readdir(dir).sort()) {
      if (name === '.' || name === '..' || entries.length > limit) continue;
      const full = `${dir}/${name}`;
      const stat = FS.lstat(full);
      if (FS.isDir(stat.mode)) walk(full, `${prefix}${name}/`);
      else if (FS.isFile(stat.mode)) entries.push({ path: `${prefix}${name}`, size: stat.size, read: () => FS.readFile(full) });
    }
  };
  walk('/output', '');
  return entries;
}
// JavaScript work the program left pending (a promise it started through a JsProxy) settles first,
// within the wall limit; then /output is read and the result sent.
process.once('beforeExit', () => {
  const output = keepOutputFiles(outputEntries(job.limits.maxOutputFiles), job.limits);
  const memoryError = !ended.crashed && ended.exception?.startsWith('MemoryError');
  const limit = memoryError ? { code: 'code_memory', message: 'the program ran out of memory (MemoryError)' } : output.limit;
  finish({ exitCode: ended.exitCode, exception: ended.exception ?? undefined, crashed: ended.crashed, limit, files: output.files });
});
