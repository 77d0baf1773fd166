import type { CodeErrorCode, CodeResult } from './types.js';

/** The result of a job that did not run (or was stopped before it could say anything): its limit's code and why. */
export function refused(code: CodeErrorCode, message: string): CodeResult {
  return {
    exitCode: null,
    limit: { code, message },
    stdout: '',
    stderr: '',
    stdoutTruncated: false,
    stderrTruncated: false,
    files: [],
    durationMs: 0,
    cpuMs: 0,
  };
}
