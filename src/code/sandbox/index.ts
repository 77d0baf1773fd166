import { commandFor, type NetworkIsolation, probeLauncher, runtimeFolders } from './isolation.js';
import { WarmPool } from './pool.js';
import { refused } from './refused.js';
import { type ProcessSettings, SandboxProcess } from './process.js';
import { makePythonSnapshot } from './snapshot.js';
import type { CodeJob, CodeLanguage, CodeLimits, CodeResult, CodeSandbox } from './types.js';

export type * from './types.js';

export interface CodeSandboxOptions {
  /** The server's maxima: every job's limits are lowered to them; the processes' V8 flags come from them. */
  maxima: CodeLimits;
  /** Warm processes kept ready per language (0: every job starts its own); filled at that language's first job. */
  poolSize: number;
  /** Jobs running at once in this server; more wait their turn (their signal still cancels them). */
  maxConcurrent: number;
  /** Past this many stdout + stderr bytes a job is killed (code_output_limit). Default 16 MiB or 4 x the outputBytes maximum. */
  outputCeilingBytes?: number;
  /** A job's /skill and /input files together, at most (larger jobs are refused: code_files_limit). Default 64 MiB. */
  maxInputBytes?: number;
  /** How long a process may take to load its runtime. Default 60 s. */
  startupTimeoutMs?: number;
  /** 'off' only in tests of the runner (docs/code-execution.md); default 'namespace'. */
  networkIsolation?: NetworkIsolation;
  /** Told what works but slower than it should (Python's snapshot could not be made). */
  onWarning?: (message: string) => void;
}

const LANGUAGES: CodeLanguage[] = ['python', 'javascript'];

function clamp(limits: CodeLimits, maxima: CodeLimits): CodeLimits {
  const lower = (key: keyof CodeLimits) => Math.max(0, Math.min(limits[key], maxima[key]));
  return {
    wallMs: lower('wallMs'),
    cpuMs: lower('cpuMs'),
    memoryMb: lower('memoryMb'),
    outputBytes: lower('outputBytes'),
    maxOutputFiles: lower('maxOutputFiles'),
    maxOutputFileBytes: lower('maxOutputFileBytes'),
  };
}

/** Waiters for a free slot, first come first served. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(count: number) {
    this.#free = count;
  }
  async acquire(signal: AbortSignal | undefined): Promise<boolean> {
    if (this.#free > 0) {
      this.#free--;
      return true;
    }
    return new Promise((resolve) => {
      const grant = () => {
        signal?.removeEventListener('abort', cancel);
        resolve(true);
      };
      const cancel = () => {
        this.#waiting.splice(this.#waiting.indexOf(grant), 1);
        resolve(false);
      };
      this.#waiting.push(grant);
      signal?.addEventListener('abort', cancel, { once: true });
    });
  }
  release() {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}

/**
 * The sandbox that runs untrusted Python (Pyodide) and JavaScript (QuickJS): each job in a process of
 * its own, under Node's permission model, in network and PID namespaces, with an empty environment and
 * per-job limits (docs/code-execution.md). Whether it can isolate is probed once, here.
 */
export interface LocalCodeSandbox extends CodeSandbox {
  /** Who programs run as (nobody, root without capabilities...); null when unavailable. */
  runsAs: string | null;
  /** How Python processes start: from the runtime's snapshot, or the runtime's own start; null before the first. */
  pythonStartsFrom(): Promise<'snapshot' | 'runtime' | null>;
}

export async function createCodeSandbox(options: CodeSandboxOptions): Promise<LocalCodeSandbox> {
  let folders: string[] | undefined;
  let missing: string | undefined;
  try {
    folders = runtimeFolders();
  } catch (error) {
    // A runtime package missing from node_modules: no code at all rather than half of it.
    missing = `a runtime cannot be found: ${(error as Error).message}`;
  }
  const probe = folders ? await probeLauncher(options.networkIsolation ?? 'namespace', folders) : { reason: missing as string };
  const settings: ProcessSettings = {
    outputCeilingBytes: options.outputCeilingBytes ?? Math.max(16 * 1024 * 1024, 4 * options.maxima.outputBytes),
    startupTimeoutMs: options.startupTimeoutMs ?? 60_000,
  };
  const maxInputBytes = options.maxInputBytes ?? 64 * 1024 * 1024;
  const slots = new Slots(Math.max(1, options.maxConcurrent));
  const running = new Set<SandboxProcess>();
  let closed = false;

  const pools = new Map<CodeLanguage, WarmPool>();
  /** Python's runtime snapshot, made at the first Python process; null (each starts the runtime) if it could not be. */
  let pythonSnapshot: Promise<Uint8Array | null> | undefined;
  if ('launcher' in probe) {
    for (const language of LANGUAGES) {
      const command = commandFor(language, probe.launcher, options.maxima);
      const firstFrame =
        language === 'python'
          ? () =>
              (pythonSnapshot ??= makePythonSnapshot(command, settings.startupTimeoutMs).then((made) => {
                if ('snapshot' in made) return made.snapshot;
                options.onWarning?.(
                  `code sandbox: Python's runtime snapshot could not be made (${made.reason}); each Python process starts the runtime (seconds)`,
                );
                return null;
              }))
          : () => undefined;
      pools.set(language, new WarmPool(Math.max(0, options.poolSize), () => new SandboxProcess(command, settings, firstFrame())));
    }
  }

  return {
    runsAs: 'launcher' in probe ? probe.launcher.user : null,

    async pythonStartsFrom() {
      if (!pythonSnapshot) return null;
      return (await pythonSnapshot) ? 'snapshot' : 'runtime';
    },

    availability() {
      return 'launcher' in probe ? { available: true } : { available: false, reason: probe.reason };
    },

    async run(job: CodeJob): Promise<CodeResult> {
      if ('reason' in probe) return refused('code_unavailable', `code execution is unavailable: ${probe.reason}`);
      if (closed) return refused('code_unavailable', 'the sandbox is shut down');
      const pool = pools.get(job.language);
      if (!pool) return refused('code_crashed', `unknown language: ${String(job.language)}`);
      const inputBytes = [...(job.skillFiles ?? []), ...(job.inputFiles ?? [])].reduce(
        (sum, file) => sum + file.content.byteLength + file.path.length,
        job.code.length,
      );
      if (inputBytes > maxInputBytes) return refused('code_files_limit', `the code and its files hold more than ${maxInputBytes} bytes`);
      if (!(await slots.acquire(job.signal))) return refused('code_cancelled', 'the execution was cancelled while waiting');
      const process = pool.take();
      running.add(process);
      try {
        return await process.run(job, clamp(job.limits, options.maxima));
      } finally {
        process.kill();
        running.delete(process);
        slots.release();
      }
    },

    async close() {
      closed = true;
      const ending = [...running].map((process) => {
        process.kill();
        return process.closed;
      });
      await Promise.all([...[...pools.values()].map((pool) => pool.close()), ...ending]);
    },
  };
}
