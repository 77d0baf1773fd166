import type { Actor } from '../tenancy/permissions.js';
import { errorColumn, objectColumn, optionalObjectColumn } from './columns.js';
import type { Task } from './schemas.js';
import type { FireRow, TaskRow } from './store/index.js';

/** Public shapes of tasks and fire records. */

function actor(type: string | null, id: string | null): Actor | null {
  return type ? { type: type as Actor['type'], id } : null;
}

/** The earlier of the next cron time and the earliest queued work. */
function nextRunAt(row: TaskRow & { queued_at?: string | null }): string | null {
  const candidates = [row.next_run_at, row.queued_at ?? null].filter((v): v is string => Boolean(v));
  return candidates.length ? candidates.sort()[0] : null;
}

export function taskSummary(row: TaskRow & { queued_at?: string | null }) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    agentId: row.agent_id,
    teamId: row.team_id,
    appId: row.app_id,
    type: row.type,
    schedule: row.schedule,
    priority: row.priority,
    dueAt: row.due_at,
    status: row.status,
    lastRunAt: row.last_run_at,
    nextRunAt: nextRunAt(row),
    createdAt: row.created_at,
  };
}

export function taskView(row: TaskRow & { queued_at?: string | null }, publicBaseUrl: string): Task {
  let trigger: Task['trigger'] = null;
  if (row.trigger_type === 'webhook') trigger = { type: 'webhook', url: `${publicBaseUrl}/api/v1/hooks/${row.id}` };
  if (row.trigger_type === 'event') trigger = { type: 'event', event: row.trigger_event!, taskId: row.trigger_task_id! };
  const approval: Task['approval'] =
    row.requires_approval || row.approval_action
      ? {
          action: row.approval_action,
          payload: optionalObjectColumn(row.approval_payload, 'tasks.approval_payload'),
          requestedBy: actor(row.requested_by_type, row.requested_by_id),
          decision: row.decision as 'approved' | 'rejected' | null,
          decidedBy: actor(row.decided_by_type, row.decided_by_id),
          decidedAt: row.decided_at,
        }
      : null;
  return {
    ...taskSummary(row),
    timezone: row.timezone,
    input: objectColumn(row.input, 'tasks.input'),
    requiresApproval: Boolean(row.requires_approval),
    misfirePolicy: row.misfire_policy,
    overlapPolicy: row.overlap_policy,
    retryPolicy: { maxAttempts: row.max_attempts, backoffSeconds: row.backoff_seconds },
    trigger,
    approval,
    lastRunId: row.last_run_id,
    lastError: errorColumn(row.last_error, 'tasks.last_error'),
    queuedAt: row.queued_at ?? null,
    updatedAt: row.updated_at,
  };
}

export function fireView(row: FireRow) {
  return {
    id: row.id,
    source: row.source,
    scheduledFor: row.scheduled_for,
    decidedAt: row.decided_at,
    decision: row.decision,
    reason: row.reason,
    missed: row.missed,
    jobId: row.job_id,
    detail: objectColumn(row.detail, 'task_fires.detail'),
  };
}
