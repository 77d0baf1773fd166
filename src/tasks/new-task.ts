import type { Agent } from '../agents/schemas.js';
import type { FieldError } from '../errors.js';
import { inputResponseFormatErrors } from '../runs/service.js';
import { nextFire, cronProblem, isTimeZone } from '../scheduler/cron.js';
import type { Principal } from '../tenancy/permissions.js';
import type { CreateTaskBody } from './schemas.js';
import * as store from './store/index.js';

/** What a create body becomes: the checks its schema cannot express, and the task's row. */

/** The body's fields that do not fit its task type, or that type's missing ones (every one, as field errors). */
export function checkCreateBody(input: CreateTaskBody, type: string): FieldError[] {
  const errors: FieldError[] = [];
  const refuse = (field: string, message: string) => errors.push({ path: `body.${field}`, message });
  const timezone = input.timezone ?? 'UTC';
  if (type === 'scheduled') {
    if (input.schedule === undefined) refuse('schedule', 'is required for scheduled tasks');
    if (!isTimeZone(timezone)) refuse('timezone', 'must be an IANA time zone such as Europe/Paris or UTC');
    else if (input.schedule !== undefined) {
      const problem = cronProblem(input.schedule, timezone);
      if (problem) refuse('schedule', problem);
    }
  } else {
    for (const field of ['schedule', 'timezone', 'misfirePolicy'] as const) {
      if (input[field] !== undefined) refuse(field, 'applies to scheduled tasks only');
    }
  }
  if (type !== 'one_time' && input.dueAt !== undefined) refuse('dueAt', 'applies to one-time tasks only');
  if (type === 'one_time' && input.overlapPolicy !== undefined) refuse('overlapPolicy', 'applies to scheduled and triggered tasks only');
  if (type === 'triggered') {
    const t = input.trigger;
    if (!t) refuse('trigger', 'is required for triggered tasks: {"type":"webhook"} or {"event":"task.completed","taskId":"..."}');
    else if (t.type === 'webhook') {
      if (t.event !== undefined) refuse('trigger.event', 'applies to event triggers only');
      if (t.taskId !== undefined) refuse('trigger.taskId', 'applies to event triggers only');
    } else {
      if (t.event === undefined) refuse('trigger.event', 'is required for event triggers');
      if (t.taskId === undefined) refuse('trigger.taskId', 'is required for event triggers');
    }
  } else if (input.trigger !== undefined) {
    refuse('trigger', 'applies to triggered tasks only');
  }
  // The input's responseFormat shapes the task's answers (docs/runtime.md, "Structured answers").
  errors.push(...inputResponseFormatErrors(input.input, 'body.input'));
  return errors;
}

/** A triggered task listens for a platform event unless its trigger is a webhook. */
export const isEventTrigger = (input: CreateTaskBody, type: string) => type === 'triggered' && input.trigger?.type !== 'webhook';

export interface NewTask {
  id: string;
  principal: Principal;
  agent: Agent;
  input: CreateTaskBody;
  type: string;
  /** The webhook secret, sealed for this row; null for other tasks. */
  sealedSecret: string | null;
  at: string;
}

/** The row of a task created through the API (checked with checkCreateBody first). */
export function taskRowFromBody({ id, principal, agent, input, type, sealedSecret, at }: NewTask): store.TaskRow {
  const trigger = input.trigger;
  const isEvent = isEventTrigger(input, type);
  const requiresApproval = input.requiresApproval ?? false;
  return store.newTaskRow({
    id,
    tenant_id: principal.tenantId,
    agent_id: agent.id,
    app_id: input.appId ?? agent.appId,
    team_id: input.teamId ?? null,
    name: input.name,
    description: input.description,
    type,
    schedule: type === 'scheduled' ? input.schedule!.trim().split(/\s+/).join(' ') : null,
    timezone: type === 'scheduled' ? (input.timezone ?? 'UTC') : null,
    priority: input.priority ?? 'medium',
    due_at: input.dueAt ? new Date(input.dueAt).toISOString() : null,
    input: JSON.stringify(input.input ?? {}),
    requires_approval: requiresApproval ? 1 : 0,
    status: requiresApproval ? 'awaiting_approval' : 'pending',
    misfire_policy: input.misfirePolicy ?? 'skip',
    overlap_policy: input.overlapPolicy ?? 'skip',
    max_attempts: input.retryPolicy?.maxAttempts ?? 1,
    backoff_seconds: input.retryPolicy?.backoffSeconds ?? 10,
    trigger_type: type === 'triggered' ? (isEvent ? 'event' : 'webhook') : null,
    trigger_event: isEvent ? trigger!.event! : null,
    trigger_task_id: isEvent ? trigger!.taskId! : null,
    webhook_secret: sealedSecret,
    requested_by_type: requiresApproval ? principal.actor.type : null,
    requested_by_id: requiresApproval ? principal.actor.id : null,
    created_by: principal.actor.id,
    created_at: at,
  });
}

/** The first cron time of a scheduled task after `from` (scheduler time); null for other tasks. */
export function firstFire(row: store.TaskRow, from: Date): string | null {
  if (row.type !== 'scheduled') return null;
  return nextFire(row.schedule!, row.timezone ?? 'UTC', from)?.toISOString() ?? null;
}
