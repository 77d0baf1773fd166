// One JavaScript job in QuickJS (compiled to WebAssembly), in a process of its own under the same
// isolation as Python. The program sees no Node API: only the globals the prelude below defines.
// argv: the file URLs of quickjs-emscripten-core and of the release-sync variant.
import { decodeFiles, finish, keepOutputFiles, readJob, sendControl, writeAll } from './protocol.mjs';

const [coreModule, variantModule] = process.argv.slice(2);
const { newQuickJSWASMModuleFromVariant } = await import(coreModule);
const QuickJS = await newQuickJSWASMModuleFromVariant((await import(variantModule)).default);
// V8 compiles WebAssembly functions at their first call: one throwaway evaluation before `ready` moves
// that cost out of the job's time (a runtime of its own, disposed: the job gets a fresh one).
const warmup = QuickJS.newContext();
warmup.unwrapResult(warmup.evalCode('JSON.stringify([1, "a", { b: [] }].map(String)) + new Error("e").stack')).dispose();
warmup.dispose();
sendControl({ type: 'ready' });

const job = await readJob();
if (job === null) process.exit(0);
const { limits } = job;

/** Files by absolute path: /skill and /input read-only, /output written by the program. */
const files = new Map();
for (const file of decodeFiles(job.skillFiles)) files.set(`/skill/${file.path}`, file.content);
for (const file of decodeFiles(job.inputFiles)) files.set(`/input/${file.path}`, file.content);
let filesLimit;

function normalize(path) {
  if (typeof path !== 'string' || !path.startsWith('/')) throw new Error(`not an absolute path: ${String(path)}`);
  const parts = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return `/${parts.join('/')}`;
}

const runtime = QuickJS.newRuntime();
runtime.setMemoryLimit(limits.memoryMb * 1024 * 1024);
runtime.setMaxStackSize(1024 * 1024);
const deadline = Date.now() + limits.wallMs;
let interrupted = false;
runtime.setInterruptHandler(() => {
  interrupted = Date.now() > deadline;
  return interrupted;
});
const vm = runtime.newContext();

const host = vm.newObject();
const fn = (name, body) => vm.newFunction(name, body).consume((handle) => vm.setProp(host, name, handle));
fn('write', (fd, text) => {
  writeAll(vm.getNumber(fd) === 2 ? 2 : 1, Buffer.from(vm.getString(text)));
});
fn('read', (pathHandle) => {
  const path = normalize(vm.getString(pathHandle));
  const content = files.get(path);
  if (!content) return { error: vm.newError(`ENOENT: no such file: ${path}`) };
  return vm.newArrayBuffer(content.buffer.slice(content.byteOffset, content.byteOffset + content.byteLength));
});
fn('writeFile', (pathHandle, dataHandle) => {
  const path = normalize(vm.getString(pathHandle));
  if (!path.startsWith('/output/')) return { error: vm.newError(`EACCES: only /output is writable: ${path}`) };
  const data = new Uint8Array(vm.getArrayBuffer(dataHandle).value.slice());
  const isNew = !files.has(path);
  const count = [...files.keys()].filter((name) => name.startsWith('/output/')).length;
  if (data.length > limits.maxOutputFileBytes || (isNew && count >= limits.maxOutputFiles)) {
    filesLimit = {
      code: 'code_files_limit',
      message:
        data.length > limits.maxOutputFileBytes
          ? `${path} is larger than ${limits.maxOutputFileBytes} bytes`
          : `/output holds more than ${limits.maxOutputFiles} files`,
    };
    return { error: vm.newError(`EFBIG: ${filesLimit.message}`) };
  }
  files.set(path, data);
});
fn('list', (pathHandle) => {
  const prefix = `${normalize(vm.getString(pathHandle)).replace(/\/$/, '')}/`;
  const names = new Set();
  for (const name of files.keys()) if (name.startsWith(prefix)) names.add(name.slice(prefix.length).split('/')[0]);
  const array = vm.newArray();
  for (const [index, name] of [...names].sort().entries()) vm.newString(name).consume((handle) => vm.setProp(array, index, handle));
  return array;
});
vm.setProp(vm.global, '__host', host);
host.dispose();

// The program's globals, written in the sandbox's own JavaScript over the host functions above.
const prelude = `(() => {
  const host = globalThis.__host; delete globalThis.__host;
  const show = (value) => typeof value === 'string' ? value
    : value instanceof Error ? (value.stack ? value.name + ': ' + value.message + '\\n' + value.stack : String(value))
    : (() => { try { return JSON.stringify(value) ?? String(value); } catch { return String(value); } })();
  const line = (fd) => (...values) => host.write(fd, values.map(show).join(' ') + '\\n');
  globalThis.console = { log: line(1), info: line(1), debug: line(1), error: line(2), warn: line(2) };
  const utf8 = {
    encode(text) {
      const bytes = [];
      for (const char of String(text)) {
        let c = char.codePointAt(0);
        if (c < 0x80) bytes.push(c);
        else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
        else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
        else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      }
      return new Uint8Array(bytes);
    },
    decode(bytes) {
      let text = '';
      for (let i = 0; i < bytes.length; ) {
        const b = bytes[i];
        const n = b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
        let c = n === 1 ? b : b & (0xff >> (n + 1));
        for (let k = 1; k < n; k++) c = (c << 6) | (bytes[i + k] & 63);
        text += String.fromCodePoint(c);
        i += n;
      }
      return text;
    },
  };
  globalThis.fs = Object.freeze({
    readFile(path, encoding = 'utf8') {
      const bytes = new Uint8Array(host.read(path));
      return encoding === 'utf8' ? utf8.decode(bytes) : bytes;
    },
    writeFile(path, data) {
      const bytes = typeof data === 'string' ? utf8.encode(data) : data instanceof ArrayBuffer ? new Uint8Array(data) : data;
      if (!(bytes instanceof Uint8Array)) throw new TypeError('writeFile takes a string, an ArrayBuffer or a Uint8Array');
      host.writeFile(path, bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    },
    readdir(path) { return host.list(path); },
    exists(path) { try { host.read(path); return true; } catch { return host.list(path).length > 0; } },
  });
})();`;
vm.unwrapResult(vm.evalCode(prelude, 'prelude.js')).dispose();
vm.setProp(vm.global, 'scriptPath', vm.newString(job.scriptPath));
const args = vm.newArray();
for (const [index, arg] of job.args.entries()) vm.newString(arg).consume((handle) => vm.setProp(args, index, handle));
vm.setProp(vm.global, 'scriptArgs', args);
args.dispose();

/** The uncaught error's "Name: message" (its stack to stderr) and the limit it stands for, if any. */
function uncaught(errorHandle) {
  let error;
  try {
    error = vm.dump(errorHandle);
  } catch {
    error = { name: 'InternalError', message: 'out of memory' };
  }
  errorHandle.dispose();
  const name = typeof error === 'object' && error !== null ? (error.name ?? 'Error') : 'Error';
  const message = typeof error === 'object' && error !== null ? String(error.message ?? '') : String(error);
  const stack = typeof error === 'object' && error?.stack ? `\n${error.stack}` : '';
  writeAll(2, Buffer.from(`Uncaught ${name}: ${message}${stack}\n`));
  const limit = interrupted
    ? { code: 'code_timeout', message: `the program ran longer than ${limits.wallMs} ms` }
    : name === 'InternalError' && /out of memory/.test(message)
      ? { code: 'code_memory', message: `the program used more than ${limits.memoryMb} MB` }
      : name === 'RangeError' && /stack overflow/.test(message)
        ? { code: 'code_memory', message: 'the program overflowed its stack' }
        : undefined;
  return { exception: `${name}: ${message}`.slice(0, 2000), limit };
}

let ended = { exitCode: 0 };
const result = vm.evalCode(job.code, job.scriptPath);
if (result.error) ended = { exitCode: 1, ...uncaught(result.error) };
else {
  result.value.dispose();
  // Promise jobs (async functions, then callbacks) run to the end; there are no timers.
  for (;;) {
    const jobs = runtime.executePendingJobs();
    if (jobs.error) {
      ended = { exitCode: 1, ...uncaught(jobs.error) };
      break;
    }
    if (jobs.value === 0) break;
  }
}

const entries = [...files.entries()]
  .filter(([path]) => path.startsWith('/output/'))
  .map(([path, content]) => ({ path: path.slice('/output/'.length), size: content.length, read: () => content }));
const output = keepOutputFiles(entries, limits);
finish({ exitCode: ended.exitCode, exception: ended.exception, limit: ended.limit ?? filesLimit ?? output.limit, files: output.files });
