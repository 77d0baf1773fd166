import type { NumberField } from './fields.js';

/** The tenant's limits and budget (PUT /api/v1/limits). */
export const LIMIT_FIELDS: NumberField<'rateLimitPerMinute' | 'maxConcurrentRuns' | 'monthlyBudgetUsd'>[] = [
  {
    name: 'monthlyBudgetUsd',
    label: 'Monthly budget (USD)',
    description: 'runs are admitted while the month’s spend and what running runs reserve stay below it',
    blank: 'no budget',
    min: 0,
    decimal: true,
  },
  {
    name: 'maxConcurrentRuns',
    label: 'Runs at once',
    description: 'runs executing at the same time, on all replicas',
    blank: 'no limit',
    min: 1,
  },
  {
    name: 'rateLimitPerMinute',
    label: 'Requests per minute per API key',
    description: 'for keys without a limit of their own (below)',
    blank: 'the platform’s default',
    min: 1,
  },
];

/** A key's own requests per minute (PATCH /api/v1/api-keys/:id); blank: the tenant's. */
export const KEY_RATE_LIMIT_FIELD: NumberField<'rateLimitPerMinute'> = {
  name: 'rateLimitPerMinute',
  label: 'Own limit',
  description: '',
  blank: 'the tenant’s',
  min: 1,
};

/** The server's bound on every retention age, in days (src/tenancy/retention.ts). */
const MAX_DAYS = 36_500;

/** How long things are kept (PUT /api/v1/retention), in days. */
export const RETENTION_FIELDS: NumberField<
  'runsDays' | 'conversationsDays' | 'filesDays' | 'auditEventsDays' | 'runEventsCompactAfterDays'
>[] = [
  {
    name: 'runsDays',
    label: 'Runs (days)',
    description: 'ended runs and their events, from their start; knowledge’s token usage too, from when it was spent',
    blank: 'keep forever',
    min: 1,
    max: MAX_DAYS,
  },
  {
    name: 'conversationsDays',
    label: 'Conversations (days)',
    description: 'from their last change, with their messages',
    blank: 'keep forever',
    min: 1,
    max: MAX_DAYS,
  },
  {
    name: 'filesDays',
    label: 'Files (days)',
    description: 'uploaded files, from their upload',
    blank: 'keep forever',
    min: 1,
    max: MAX_DAYS,
  },
  {
    name: 'auditEventsDays',
    label: 'Audit events (days)',
    description: 'at least 30, so a key cannot erase its own changes overnight',
    blank: 'keep forever',
    min: 30,
    max: MAX_DAYS,
  },
  {
    name: 'runEventsCompactAfterDays',
    label: 'Compact run events after (days)',
    description: 'a finished run keeps its output, tool calls and cost; its event stream shrinks to its end',
    blank: 'never',
    min: 1,
    max: MAX_DAYS,
  },
];

export type CodeField = 'wallMs' | 'cpuMs' | 'memoryMb' | 'outputBytes' | 'maxOutputFiles' | 'maxOutputFileBytes' | 'concurrentExecutions';

/** Code execution's limits (PUT /api/v1/code/settings), each at most the server's maximum. */
export function codeFields(maxima: Record<CodeField, number>): NumberField<CodeField>[] {
  const field = (name: CodeField, label: string, description: string, min = 1): NumberField<CodeField> => ({
    name,
    label,
    description: `${description}; the server allows ${maxima[name]}`,
    blank: `the server’s maximum, ${maxima[name]}`,
    min,
    max: maxima[name],
  });
  return [
    field('wallMs', 'Wall time (ms)', 'one execution'),
    field('cpuMs', 'CPU time (ms)', 'one execution'),
    field('memoryMb', 'Memory (MiB)', 'one execution'),
    field('outputBytes', 'Output kept (bytes)', 'of stdout, and of stderr'),
    field('maxOutputFiles', 'Output files', 'files one execution may leave in /output', 0),
    field('maxOutputFileBytes', 'Output file size (bytes)', 'the largest file left in /output'),
    field('concurrentExecutions', 'Executions at once', 'of the tenant, in one server process'),
  ];
}
