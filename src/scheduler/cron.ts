import { Cron } from 'croner';

/**
 * Cron expressions: five fields (minute hour day-of-month month day-of-week), evaluated by croner in
 * an IANA time zone. Daylight-saving changes follow croner: a wall-clock time that does not exist
 * (spring forward) fires at the first instant after the gap, one that happens twice (fall back) fires
 * once, at its first occurrence.
 */

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** `sloppyRanges`: a step after a number or nothing (`5/5`, `/10`) stays accepted, as it was before croner 10. */
function pattern(expression: string, timezone: string) {
  return new Cron(expression, { timezone, paused: true, sloppyRanges: true });
}

/** Why the expression is not acceptable, or null when it is. */
export function cronProblem(expression: string, timezone: string): string | null {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) return `must have five fields (minute hour day-of-month month day-of-week), got ${fields.length}`;
  let cron: Cron;
  try {
    cron = pattern(fields.join(' '), timezone);
  } catch (err) {
    return `is not a valid cron expression: ${(err as Error).message.replace(/^CronPattern: /, '')}`;
  }
  if (!cron.nextRun()) return 'never fires';
  return null;
}

/** The first fire time strictly after `after`, or null when there is none. */
export function nextFire(expression: string, timezone: string, after: Date): Date | null {
  return pattern(expression, timezone).nextRun(after);
}

/** Overdue cron times are counted up to this many; a longer backlog still fires at most once. */
const MAX_COUNTED = 1_000;

export interface FirePlan {
  /** The cron time that fires now, or null when none does. */
  fire: Date | null;
  /** `misfire` when that time is late but fires anyway (fire_once policy). */
  fireReason: 'misfire' | null;
  /** Overdue cron times that get no run of their own: how many, and the oldest. */
  missedCount: number;
  firstMissed: Date | null;
  /** The first fire time after `now`: the new next_run_at. */
  next: Date | null;
}

/** A task's schedule as its fires are planned: the cron expression in its timezone, and its misfire rule. */
export interface FireSchedule {
  expression: string;
  timezone: string;
  /** How late a fire may still run. */
  graceMs: number;
  misfirePolicy: 'skip' | 'fire_once';
}

/**
 * Decides what the cron times due by `now` (the stored next_run_at `due`, and every later one up to
 * `now`) become: the latest fires if it is at most `graceMs` late; older ones are misfires. When
 * none is on time, `skip` passes them all over and `fire_once` runs once for all of them.
 */
export function planFires({ expression, timezone, graceMs, misfirePolicy }: FireSchedule, due: Date, now: Date): FirePlan {
  const cron = pattern(expression, timezone);
  let last = due;
  let count = 1;
  for (let t = cron.nextRun(due); t && t <= now && count < MAX_COUNTED; t = cron.nextRun(t)) {
    last = t;
    count++;
  }
  if (count >= MAX_COUNTED) {
    // Counting stopped early: find the latest time before now directly.
    const recent = cron.nextRun(new Date(now.getTime() - graceMs - 1));
    if (recent && recent <= now) last = recent;
  }
  const next = cron.nextRun(now);
  const onTime = now.getTime() - last.getTime() <= graceMs;
  if (onTime || misfirePolicy === 'fire_once') {
    return { fire: last, fireReason: onTime ? null : 'misfire', missedCount: count - 1, firstMissed: count > 1 ? due : null, next };
  }
  return { fire: null, fireReason: null, missedCount: count, firstMissed: due, next };
}
