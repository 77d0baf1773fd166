import { type ChildProcess, type StdioOptions, spawn } from 'node:child_process';
import fs from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { mediaTypeOf } from './media-types.js';
import type { CodeErrorCode, CodeFile, CodeJob, CodeLimits, CodeResult } from './types.js';
import { refused } from './refused.js';

/** How a sandboxed process is started: the whole command line, isolation prefix included. */
export interface ProcessCommand {
  file: string;
  args: string[];
  /** The node process is the launcher's child (unshare --fork puts it in its own PID namespace). */
  nodeIsChild: boolean;
}

export interface ProcessSettings {
  /** Past this many stdout + stderr bytes the job is killed (code_output_limit); kept bytes are CodeLimits.outputBytes. */
  outputCeilingBytes: number;
  /** How long a process may take to load its runtime before it counts as crashed. */
  startupTimeoutMs: number;
}

/** How often /proc is read for a running job's CPU time and memory. */
const POLL_MS = 25;
/** Linux reports CPU time in USER_HZ ticks, 100 a second on every architecture. */
const MS_PER_TICK = 10;
/** Control lines (JSON, base64 files) beyond the files' limits: the result's own fields. */
const CONTROL_OVERHEAD_BYTES = 1024 * 1024;
const EXCEPTION_CHARS = 2000;
/** What the runtime writes to stderr before its job, kept to say why it failed to start. */
const STARTUP_OUTPUT_BYTES = 4096;
/** A process that sent its result and does not leave within this is killed (the result stands). */
const RESULT_EXIT_GRACE_MS = 2000;
/** The limit codes a child may report of itself (what it can see: MemoryError, QuickJS's interrupt, /output). */
const CHILD_LIMITS = new Set<CodeErrorCode>(['code_memory', 'code_timeout', 'code_files_limit']);

/** Bytes of one stream: the first `keep` kept, the rest counted and dropped. */
export class Capture {
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  total = 0;
  constructor(private readonly keep: number) {}
  add(chunk: Buffer) {
    this.total += chunk.length;
    if (this.#kept < this.keep) {
      const part = chunk.subarray(0, this.keep - this.#kept);
      this.#chunks.push(part);
      this.#kept += part.length;
    }
  }
  get truncated() {
    return this.total > this.#kept;
  }
  text() {
    return Buffer.concat(this.#chunks).toString('utf8');
  }
  /** The last lines kept, on one line: what a runtime that failed to start said. */
  lastLines(count: number) {
    return this.text().trim().split('\n').slice(-count).join(' / ');
  }
}

/**
 * A sandboxed process started from its command line: its own process group (a kill takes everything
 * it started with it), cwd /, and no secret of the server: not even its environment.
 */
export function spawnSandboxed(command: ProcessCommand, extraArgs: string[], stdio: StdioOptions): ChildProcess {
  return spawn(command.file, [...command.args, ...extraArgs], { env: {}, cwd: '/', detached: true, stdio });
}

/** SIGKILL to the child's whole process group; no-op once it is gone. */
export function killGroup(child: ChildProcess) {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

interface ChildResult {
  exitCode: number;
  exception?: string;
  crashed?: boolean;
  limit?: { code: CodeErrorCode; message: string };
  files: { path: string; content: string }[];
}

interface Usage {
  cpuTicks: number;
  rssBytes: number;
}

/** CPU ticks and RSS of a live process from /proc; null once it is gone. */
function readUsage(pid: number): Usage | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpuTicks = Number(fields[11]) + Number(fields[12]);
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return { cpuTicks, rssBytes: rss ? Number(rss[1]) * 1024 : 0 };
  } catch {
    return null;
  }
}

/** The PID of the launcher's only child (the node process behind unshare --fork). */
function childPid(pid: number): number | null {
  try {
    const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
    return children[0] ? Number(children[0]) : null;
  } catch {
    return null;
  }
}

function encodeFiles(files: CodeFile[] | undefined) {
  return (files ?? []).map((file) => ({ path: file.path, content: Buffer.from(file.content).toString('base64') }));
}

/** A path the child named under /output, kept only when it is plain: relative, no '.', '..' or empty parts. */
function safeOutputPath(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= 1024 &&
    value.split('/').every((part) => part !== '' && part !== '.' && part !== '..' && !part.includes('\0'))
  );
}

/**
 * One sandboxed process: started (loading its runtime) ahead of its job, then given exactly one job
 * and discarded. It is its own process group, so a kill takes everything it started with it.
 */
export class SandboxProcess {
  readonly #child: ChildProcess;
  readonly #command: ProcessCommand;
  readonly #settings: ProcessSettings;
  readonly ready: Promise<void>;
  /** Resolves when the process has exited and its pipes are closed. */
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #control = '';
  readonly #controlDecoder = new StringDecoder('utf8');
  #controlBytes = 0;
  #controlCeiling = Number.POSITIVE_INFINITY;
  #onResult: ((result: ChildResult) => void) | undefined;
  #result: ChildResult | undefined;
  #used = false;

  /**
   * `firstFrame`: written on stdin before anything else once it resolves (Python's runtime snapshot;
   * an empty frame when there is none): that child reads it before it loads its runtime.
   */
  constructor(command: ProcessCommand, settings: ProcessSettings, firstFrame?: Promise<Uint8Array | null>) {
    this.#command = command;
    this.#settings = settings;
    this.#child = spawnSandboxed(command, [], ['pipe', 'pipe', 'pipe', 'pipe']);
    // An idle warm process does not keep the server's event loop alive (close() ends it).
    this.#child.unref();
    for (const stream of this.#child.stdio) (stream as { unref?: () => void } | null)?.unref?.();
    this.#child.stdin?.on('error', () => {});
    void firstFrame?.then((bytes) => {
      const header = Buffer.alloc(4);
      header.writeUInt32BE(bytes?.length ?? 0);
      this.#child.stdin?.write(header);
      if (bytes?.length) this.#child.stdin?.write(bytes);
    });
    // Read from the start: a stream left paused never ends, and the process's 'close' would never come.
    // Before the job, what the runtime writes to stderr is kept (a little) to say why it failed to start.
    const startup = new Capture(STARTUP_OUTPUT_BYTES);
    this.#child.stdout?.on('data', (chunk: Buffer) => this.#output?.(1, chunk));
    this.#child.stderr?.on('data', (chunk: Buffer) => (this.#output ? this.#output(2, chunk) : startup.add(chunk)));
    this.closed = new Promise((resolve) => {
      this.#child.on('close', (code, signal) => resolve({ code, signal }));
      this.#child.on('error', () => resolve({ code: null, signal: null }));
    });
    let markReady = () => {};
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`the runtime did not start within ${settings.startupTimeoutMs} ms`));
      }, settings.startupTimeoutMs);
      timer.unref();
      markReady = () => {
        clearTimeout(timer);
        resolve();
      };
      void this.closed.then(({ code, signal }) => {
        clearTimeout(timer);
        const said = startup.lastLines(3);
        reject(new Error(`the runtime exited before it was ready (${signal ?? `exit code ${code}`})${said ? `: ${said}` : ''}`));
      });
    });
    this.ready.catch(() => {});
    const control = this.#child.stdio[3] as NodeJS.ReadableStream;
    control.on('data', (chunk: Buffer) => this.#controlData(chunk, markReady));
  }

  #controlData(chunk: Buffer, onReady: () => void) {
    this.#controlBytes += chunk.length;
    if (this.#controlBytes > this.#controlCeiling) {
      this.#limitHit?.({ code: 'code_files_limit', message: 'the program sent back more than its /output limits allow' });
      return;
    }
    this.#control += this.#controlDecoder.write(chunk);
    for (let end = this.#control.indexOf('\n'); end >= 0; end = this.#control.indexOf('\n')) {
      const line = this.#control.slice(0, end);
      this.#control = this.#control.slice(end + 1);
      let message: { type?: unknown } & Partial<ChildResult>;
      try {
        message = JSON.parse(line);
      } catch {
        continue;
      }
      if (message.type === 'ready') onReady();
      else if (message.type === 'result' && !this.#result) {
        this.#result = message as ChildResult;
        this.#onResult?.(this.#result);
      }
    }
  }

  #limitHit: ((limit: { code: CodeErrorCode; message: string }) => void) | undefined;
  /** Where the program's stdout (1) and stderr (2) go once its job runs. */
  #output: ((fd: 1 | 2, chunk: Buffer) => void) | undefined;

  /** From here on the process keeps the event loop alive: whoever awaits its job or its end is not dropped. */
  #hold() {
    this.#child.ref();
    for (const stream of this.#child.stdio) (stream as { ref?: () => void } | null)?.ref?.();
  }

  /** SIGKILL to the whole process group; no-op once it is gone. */
  kill() {
    if (this.#child.pid === undefined || this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    this.#hold();
    killGroup(this.#child);
  }

  /** Runs the one job this process will ever run (the limits already clamped to the server's maxima). */
  async run(job: CodeJob, limits: CodeLimits): Promise<CodeResult> {
    if (this.#used) throw new Error('a sandbox process runs one job only');
    this.#used = true;
    this.#hold();
    const stdout = new Capture(limits.outputBytes);
    const stderr = new Capture(limits.outputBytes);
    if (job.signal?.aborted) {
      this.kill();
      return refused('code_cancelled', 'the execution was cancelled before it started');
    }
    try {
      await this.ready;
    } catch (error) {
      this.kill();
      return refused('code_crashed', (error as Error).message);
    }
    if (job.signal?.aborted) {
      this.kill();
      return refused('code_cancelled', 'the execution was cancelled before it started');
    }

    const started = performance.now();
    const spawnedPid = this.#child.pid as number;
    const pid = this.#command.nodeIsChild ? (childPid(spawnedPid) ?? spawnedPid) : spawnedPid;
    const baseline = readUsage(pid) ?? { cpuTicks: 0, rssBytes: 0 };
    let usage = baseline;
    let limit: { code: CodeErrorCode; message: string } | undefined;
    const stop = (hit: { code: CodeErrorCode; message: string }) => {
      // After its result the process only has to leave; it is killed all the same, without a limit.
      if (!limit && !this.#result) limit = hit;
      this.kill();
    };
    this.#limitHit = stop;
    this.#controlCeiling =
      this.#controlBytes + CONTROL_OVERHEAD_BYTES + Math.ceil((limits.maxOutputFiles * limits.maxOutputFileBytes * 4) / 3);

    this.#output = (fd, chunk) => {
      (fd === 1 ? stdout : stderr).add(chunk);
      if (stdout.total + stderr.total > this.#settings.outputCeilingBytes)
        stop({ code: 'code_output_limit', message: `the program wrote more than ${this.#settings.outputCeilingBytes} bytes of output` });
    };

    const poll = setInterval(() => {
      const now = readUsage(pid);
      if (!now) return;
      usage = now;
      const cpuMs = (now.cpuTicks - baseline.cpuTicks) * MS_PER_TICK;
      if (cpuMs > limits.cpuMs) stop({ code: 'code_cpu', message: `the program used more than ${limits.cpuMs} ms of CPU time` });
      else if (now.rssBytes - baseline.rssBytes > limits.memoryMb * 1024 * 1024)
        stop({ code: 'code_memory', message: `the program used more than ${limits.memoryMb} MB of memory` });
    }, POLL_MS);
    const wall = setTimeout(
      () => stop({ code: 'code_timeout', message: `the program ran longer than ${limits.wallMs} ms` }),
      limits.wallMs,
    );
    const onAbort = () => stop({ code: 'code_cancelled', message: 'the execution was cancelled' });
    job.signal?.addEventListener('abort', onAbort, { once: true });
    // The last reading before the process leaves: its CPU time once the result is in.
    let linger: NodeJS.Timeout | undefined;
    this.#onResult = () => {
      usage = readUsage(pid) ?? usage;
      linger = setTimeout(() => this.kill(), RESULT_EXIT_GRACE_MS);
    };

    const payload = Buffer.from(
      JSON.stringify({
        code: job.code,
        scriptPath: job.scriptPath ?? (job.language === 'python' ? '/skill/main.py' : '/skill/main.js'),
        args: job.args ?? [],
        skillFiles: encodeFiles(job.skillFiles),
        inputFiles: encodeFiles(job.inputFiles),
        limits,
      }),
    );
    const header = Buffer.alloc(4);
    header.writeUInt32BE(payload.length);
    this.#child.stdin?.end(Buffer.concat([header, payload]));

    const { code, signal } = await this.closed;
    clearInterval(poll);
    clearTimeout(wall);
    clearTimeout(linger);
    job.signal?.removeEventListener('abort', onAbort);
    const durationMs = Math.round(performance.now() - started);
    const cpuMs = Math.max(0, (usage.cpuTicks - baseline.cpuTicks) * MS_PER_TICK);
    const output = {
      stdout: stdout.text(),
      stderr: stderr.text(),
      stdoutTruncated: stdout.truncated,
      stderrTruncated: stderr.truncated,
      durationMs,
      cpuMs,
    };
    if (limit) return { exitCode: null, limit, files: [], ...output };
    const result = this.#result;
    if (!result) {
      const text = output.stderr;
      const crash: { code: CodeErrorCode; message: string } =
        signal === 'SIGXCPU'
          ? { code: 'code_cpu', message: 'the program reached the CPU time limit of its process' }
          : /heap out of memory|Out of memory|WebAssembly\.Memory/i.test(text)
            ? { code: 'code_memory', message: 'the runtime ran out of memory' }
            : { code: 'code_crashed', message: `the runtime ended without a result (${signal ?? `exit code ${code}`})` };
      return { exitCode: null, limit: crash, files: [], ...output };
    }
    return { ...this.#checked(result, limits), ...output };
  }

  /** The child's report, believed only as far as it is checked here. */
  #checked(result: ChildResult, limits: CodeLimits): Pick<CodeResult, 'exitCode' | 'exception' | 'limit' | 'files'> {
    let limit =
      result.limit && CHILD_LIMITS.has(result.limit.code)
        ? { code: result.limit.code, message: String(result.limit.message).slice(0, 500) }
        : result.crashed
          ? { code: 'code_crashed' as const, message: 'the runtime failed while running the program' }
          : undefined;
    const files: CodeResult['files'] = [];
    for (const file of Array.isArray(result.files) ? result.files : []) {
      if (!safeOutputPath(file?.path) || typeof file.content !== 'string') continue;
      const content = Buffer.from(file.content, 'base64');
      if (files.length >= limits.maxOutputFiles || content.length > limits.maxOutputFileBytes) {
        limit ??= { code: 'code_files_limit', message: 'the program wrote more to /output than its limits allow' };
        continue;
      }
      files.push({ path: file.path, mediaType: mediaTypeOf(file.path), content: new Uint8Array(content) });
    }
    return {
      exitCode: Number.isInteger(result.exitCode) ? result.exitCode : 1,
      ...(typeof result.exception === 'string' ? { exception: result.exception.slice(0, EXCEPTION_CHARS) } : {}),
      ...(limit ? { limit } : {}),
      files,
    };
  }
}
