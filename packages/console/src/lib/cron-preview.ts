import { Cron } from 'croner';

/** What the cron field of the task form previews: the next fire times, or why the expression is refused. */
export type CronPreview = { ok: true; times: { iso: string; local: string }[] } | { ok: false; error: string };

/** The next `count` times `expression` fires in `timeZone` after `from`, each also written in that zone. */
export function cronPreview(expression: string, timeZone: string, count = 5, from: Date = new Date()): CronPreview {
  if (!expression.trim()) return { ok: false, error: 'enter a cron expression (minute hour day month weekday)' };
  try {
    new Intl.DateTimeFormat('en', { timeZone });
  } catch {
    return { ok: false, error: `unknown time zone ${timeZone}` };
  }
  // The server's rules (src/scheduler/cron.ts): five fields, croner with sloppyRanges.
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5)
    return { ok: false, error: `must have five fields (minute hour day-of-month month day-of-week), got ${fields.length}` };
  let job: Cron;
  try {
    job = new Cron(fields.join(' '), { timezone: timeZone, paused: true, sloppyRanges: true });
  } catch (err) {
    return {
      ok: false,
      error: `not a valid cron expression: ${(err instanceof Error ? err.message : String(err)).replace(/^CronPattern: /, '')}`,
    };
  }
  const format = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  });
  const times = job.nextRuns(count, from).map((date) => ({ iso: date.toISOString(), local: format.format(date) }));
  job.stop();
  if (times.length === 0) return { ok: false, error: 'this expression never fires' };
  return { ok: true, times };
}
