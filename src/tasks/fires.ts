import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { newId, now } from '../ids.js';
import type { TraceContext } from '../tracing/tracing.js';
import type { JobQueue } from './jobs.js';
import type { TaskResources } from './resources.js';
import * as store from './store/index.js';

/**
 * Fire decisions of scheduled and triggered tasks (task_fires): whether a cron time, a webhook
 * delivery or a platform event queues work, per the task's overlap policy, each key at most once.
 */

type FireSource = 'schedule' | 'webhook' | 'event';

export interface FireInput {
  source: FireSource;
  /** Unique per task: the same key never fires twice (cron time, signed delivery, source run). */
  key: string;
  scheduledFor?: string | null;
  input?: Record<string, unknown>;
  reason?: string | null;
  missed?: number;
  detail?: Record<string, unknown>;
  /** Traced, what caused the fire (a webhook delivery's request): the parent of its span. */
  parent?: TraceContext;
  /** Traced, the fire's span: what the job it queues links to. */
  trace?: TraceContext;
}

export interface FireResult {
  fire: store.FireRow;
  duplicate: boolean;
  job: store.JobRow | null;
}

/** A platform event that chained tasks listen for. */
export interface TaskEvent {
  event: 'task.completed' | 'task.failed';
  /** The job whose task is the event's source. */
  source: Pick<store.JobRow, 'tenant_id' | 'task_id'>;
  /** Unique per source run (or job): the listeners' fire key. */
  key: string;
  /** What the listeners' runs receive, beside the event and source task. */
  input: Record<string, unknown>;
}

export class FireDecisions {
  constructor(
    private readonly r: TaskResources,
    private readonly jobs: JobQueue,
  ) {}

  /**
   * Decides one fire of a scheduled or triggered task, inside the caller's transaction: records the
   * decision under its unique key (a key seen before is a duplicate and changes nothing) and queues
   * work unless the overlap policy says otherwise. The task row is written first, so concurrent fire
   * decisions for one task (other replicas) take turns.
   */
  fire(trx: Kysely<Database>, task: store.TaskRow, f: FireInput): Promise<FireResult> {
    const tracing = this.r.tracing;
    if (!tracing) return this.decide(trx, task, f);
    // Traced, a fire is a span; the job it queues keeps its traceparent, and the job's span links to it.
    const attributes = {
      'agentry.tenant.id': task.tenant_id,
      'agentry.task.id': task.id,
      'agentry.task.name': task.name,
      'agentry.fire.source': f.source,
      'agentry.fire.key': f.key,
    };
    return tracing.inSpan('task.fire', { attributes, parent: f.parent }, async (span, ctx) => {
      const result = await this.decide(trx, task, { ...f, trace: ctx });
      span.setAttributes({
        'agentry.fire.decision': result.fire.decision,
        'agentry.fire.duplicate': result.duplicate,
        ...(result.job ? { 'agentry.job.id': result.job.id } : {}),
      });
      return result;
    });
  }

  private async decide(trx: Kysely<Database>, task: store.TaskRow, f: FireInput): Promise<FireResult> {
    await store.updateTask(trx, task.id, { updated_at: now() });
    const seen = await store.findFire(trx, task.id, f.key);
    if (seen) return { fire: seen, duplicate: true, job: null };

    let decision: 'fired' | 'queued' | 'skipped' = 'fired';
    let reason = f.reason ?? null;
    let serial = false;
    if (task.status === 'awaiting_approval') {
      decision = 'skipped';
      reason = 'awaiting_approval';
    } else if (task.overlap_policy !== 'allow') {
      const active = await store.jobsOfTask(trx, task.id, store.ACTIVE_JOB_STATES);
      if (active.length && task.overlap_policy === 'queue' && !active.some((j) => j.state === 'queued')) {
        decision = 'queued';
        serial = true;
      } else if (active.length) {
        decision = 'skipped';
        reason = task.overlap_policy === 'queue' ? 'already_queued' : 'overlap';
      }
    }
    const job =
      decision === 'skipped' ? null : this.jobs.newJob(task, { kind: 'agent', reason: f.source, input: f.input, serial, trace: f.trace });
    const fire: store.FireRow = {
      id: newId(),
      tenant_id: task.tenant_id,
      task_id: task.id,
      source: f.source,
      fire_key: f.key,
      scheduled_for: f.scheduledFor ?? null,
      decided_at: now(this.r.clock),
      decision,
      reason,
      missed: f.missed ?? 0,
      job_id: job?.id ?? null,
      detail: JSON.stringify(f.detail ?? {}),
    };
    if (!(await store.insertFire(trx, fire))) return { fire: (await store.findFire(trx, task.id, f.key))!, duplicate: true, job: null };
    if (job) await store.insertJob(trx, job);
    return { fire, duplicate: false, job };
  }

  /**
   * Fires the tasks chained to the source job's task on the event, inside the caller's transaction;
   * true when work was queued. A deleted source task fires nothing.
   */
  async fireEvent(trx: Kysely<Database>, { event, source, key, input }: TaskEvent): Promise<boolean> {
    const listeners = await store.eventListeners(trx, { tenantId: source.tenant_id, sourceTaskId: source.task_id, event });
    if (!listeners.length || !(await store.findTaskById(trx, source.task_id))) return false;
    let queued = false;
    for (const listener of listeners) {
      const r = await this.fire(trx, listener, {
        source: 'event',
        key: `event:${key}`,
        input: { event, taskId: source.task_id, ...input },
        detail: { event, sourceTaskId: source.task_id, ...('runId' in input ? { sourceRunId: input.runId } : {}) },
      });
      queued ||= Boolean(r.job);
    }
    return queued;
  }
}
