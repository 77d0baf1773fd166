import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import { newId } from '../ids.js';
import { type FireSchedule, planFires } from '../scheduler/cron.js';
import type { TaskExecutor } from './executor.js';
import * as store from './store/index.js';

/** Due scheduled tasks handled per tick; the rest wait for the next tick (a moment later). */
const BATCH = 100;

/**
 * Cron firing. Each tick finds scheduled tasks whose next_run_at has come and, per task, in one
 * transaction: moves next_run_at to the following cron time by compare-and-set (so each cron time
 * is claimed by exactly one replica), records the fire decision(s), and queues the work.
 */
export interface CronFiringOptions {
  db: Db;
  /** Decides each fire and wakes the dispatcher. */
  executor: TaskExecutor;
  /** The app's clock: which cron times have come. */
  clock: Clock;
  /** How late a cron time may still fire (TASK_MISFIRE_GRACE_SECONDS); later ones are misfires. */
  graceMs: number;
  log: FastifyBaseLogger;
  /** Told of each claimed cron time (the metrics); absent, nothing is observed. */
  observer?: CronObserver;
}

/** Told of each claimed cron time (the metrics): fired, or misfired (found past the grace), by misfire policy. */
export type CronObserver = (policy: string, outcome: 'fired' | 'misfired', count: number) => void;

export class CronFiring {
  private readonly observer: CronObserver | undefined;
  private readonly db: Db;
  private readonly executor: TaskExecutor;
  private readonly clock: Clock;
  private readonly graceMs: number;
  private readonly log: FastifyBaseLogger;

  constructor({ db, executor, clock, graceMs, log, observer }: CronFiringOptions) {
    this.observer = observer;
    this.db = db;
    this.executor = executor;
    this.clock = clock;
    this.graceMs = graceMs;
    this.log = log;
  }

  /** Fires what is due now; answers how many cron times this process claimed. */
  async tick(): Promise<number> {
    const now = new Date(this.clock.now());
    const due = await store.dueSchedules(this.db.kysely, now.toISOString(), BATCH);
    let claimed = 0;
    for (const task of due) {
      try {
        if (await this.fireTask(task, now)) claimed++;
      } catch (err) {
        this.log.error({ err, taskId: task.id }, 'firing a scheduled task failed');
      }
    }
    if (claimed) this.executor.onEnqueued();
    return claimed;
  }

  private async fireTask(task: store.TaskRow, now: Date): Promise<boolean> {
    const due = task.next_run_at!;
    const policy = task.misfire_policy === 'fire_once' ? 'fire_once' : 'skip';
    const schedule: FireSchedule = {
      expression: task.schedule!,
      timezone: task.timezone ?? 'UTC',
      graceMs: this.graceMs,
      misfirePolicy: policy,
    };
    const plan = planFires(schedule, new Date(due), now);
    const claimed = await this.db.kysely.transaction().execute(async (trx) => {
      if (!(await store.claimFireTime(trx, { taskId: task.id, due, next: plan.next?.toISOString() ?? null, at: new Date().toISOString() })))
        return false;
      // skip: overdue times are recorded as skipped; fire_once: the one run stands for them.
      if (plan.firstMissed && policy === 'skip') {
        await store.insertFire(trx, {
          id: newId(),
          tenant_id: task.tenant_id,
          task_id: task.id,
          source: 'schedule',
          fire_key: `cron:${plan.firstMissed.toISOString()}`,
          scheduled_for: plan.firstMissed.toISOString(),
          decided_at: now.toISOString(),
          decision: 'skipped',
          reason: 'misfire',
          missed: plan.missedCount,
          job_id: null,
          detail: JSON.stringify({ policy }),
        });
      }
      if (plan.fire) {
        const scheduledFor = plan.fire.toISOString();
        await this.executor.fire(trx, task, {
          source: 'schedule',
          key: `cron:${scheduledFor}`,
          scheduledFor,
          reason: plan.fireReason,
          missed: policy === 'fire_once' ? plan.missedCount : 0,
          input: { scheduledFor },
          detail: policy === 'fire_once' && plan.missedCount ? { policy } : {},
        });
      }
      return true;
    });
    if (claimed && this.observer) {
      if (plan.missedCount) this.observer(policy, 'misfired', plan.missedCount);
      if (plan.fire) this.observer(policy, 'fired', 1);
    }
    return claimed;
  }
}
