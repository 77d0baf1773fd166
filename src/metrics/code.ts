import { Counter, Histogram } from 'prom-client';
import type { Metrics } from './registry.js';

/** One code execution as the code domain tells it (code/service.ts's CodeObserver; metrics import no domain). */
interface CodeExecution {
  language: string;
  /** ok (exit 0), failed (a non-zero exit or an exception), or the limit that killed it (code_timeout...). */
  outcome: string;
  seconds: number;
}

/** Seconds: one code execution (10 ms to 10 min). */
const CODE_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** Counts code executions (docs/operations.md, "Metrics"; docs/code-execution.md): what the code domain is given to tell each one. */
export function codeObserver(metrics: Metrics): (execution: CodeExecution) => void {
  const registers = [metrics.registry];
  const executions = new Counter({
    name: 'agentry_code_executions_total',
    help: 'Code executions (code_run, skill_script_run), by language and outcome (ok, failed, or the limit that ended it)',
    labelNames: ['language', 'outcome'],
    registers,
  });
  const duration = new Histogram({
    name: 'agentry_code_execution_duration_seconds',
    help: 'Wall time of a code execution in its sandbox, by language',
    labelNames: ['language'],
    buckets: CODE_BUCKETS,
    registers,
  });
  const limitKills = new Counter({
    name: 'agentry_code_limit_kills_total',
    help: 'Code executions a limit ended (code_timeout, code_cpu, code_memory, code_output_limit, code_files_limit...), by language and code',
    labelNames: ['language', 'code'],
    registers,
  });
  return (e) => {
    executions.inc({ language: e.language, outcome: e.outcome });
    duration.observe({ language: e.language }, e.seconds);
    if (e.outcome.startsWith('code_')) limitKills.inc({ language: e.language, code: e.outcome });
  };
}
