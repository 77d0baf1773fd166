// The interface between the sandbox (this folder) and the code domain around it (src/code): helper
// B codes against it; a change here is announced in a commit starting `code(interface):`.

export type CodeLanguage = 'python' | 'javascript';

export interface CodeLimits {
  /** Per execution. */
  wallMs: number;
  cpuMs: number;
  /** Memory the program may use beyond the loaded runtime (process RSS growth; QuickJS's own heap limit). */
  memoryMb: number;
  /** stdout and stderr kept, each (the rest dropped, flagged). */
  outputBytes: number;
  /** What /output may hold. */
  maxOutputFiles: number;
  maxOutputFileBytes: number;
}

/** path: relative to its mount, '/'-separated, no '..'. */
export interface CodeFile {
  path: string;
  content: Uint8Array;
}

export interface CodeJob {
  language: CodeLanguage;
  /** The source to run (for a skill script: the script's text). */
  code: string;
  /** What argv[0] / __file__ says, e.g. '/skill/scripts/match_invoices.py'. */
  scriptPath?: string;
  /** sys.argv[1:] (python) / scriptArgs (javascript). */
  args?: string[];
  /** Mounted read-only at /skill. */
  skillFiles?: CodeFile[];
  /** Mounted read-only at /input. */
  inputFiles?: CodeFile[];
  limits: CodeLimits;
  /** The run was cancelled: kill, report code_cancelled. */
  signal?: AbortSignal;
}

export type CodeErrorCode =
  | 'code_timeout'
  | 'code_cpu'
  | 'code_memory'
  | 'code_output_limit'
  | 'code_files_limit'
  | 'code_cancelled'
  | 'code_unavailable'
  | 'code_crashed';

export interface CodeResult {
  /** 0 ok, non-zero for sys.exit(n) or an uncaught exception (1), null when killed. */
  exitCode: number | null;
  /** The uncaught exception's type and message (traceback in stderr). */
  exception?: string;
  /** Set when the sandbox killed or refused the job. */
  limit?: { code: CodeErrorCode; message: string };
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** What /output held, within limits. */
  files: { path: string; mediaType: string; content: Uint8Array }[];
  durationMs: number;
  cpuMs: number;
}

export interface CodeSandbox {
  /** Whether code can run here; when not, why (doctor prints it; the tools are not offered). */
  availability(): { available: true } | { available: false; reason: string };
  run(job: CodeJob): Promise<CodeResult>;
  close(): Promise<void>;
}
