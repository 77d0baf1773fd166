/**
 * Why a task's action would be refused in its present state, or null when the server takes it: the
 * transitions of docs/scheduling.md ("Task states") as src/tasks applies them, so the page greys a
 * button out with the reason instead of answering a 409 after the click.
 */
export type TaskAction = 'run' | 'cancel' | 'retry';

export interface TaskState {
  status: string;
  /** When the earliest queued work may start; null: none queued (nextRunAt also counts cron times). */
  queuedAt?: string | null;
  /** An approval task performs its action when approved; it is never run by hand. */
  approval?: { action: string | null } | null;
}

export function taskActionRefused(action: TaskAction, task: TaskState): string | null {
  if (action === 'run') {
    if (task.status === 'awaiting_approval') return 'the task awaits approval: approve it first';
    if (task.approval?.action) return 'an approval task performs its action when approved: retry it if that failed';
    return null;
  }
  if (action === 'retry') return task.status === 'failed' ? null : `only a failed task is retried (this one is ${task.status})`;
  // Queued work (a pending fire or automatic retry) is cancellable whatever the status.
  if (task.status === 'pending' || task.status === 'running' || task.queuedAt) return null;
  return `nothing to cancel: the task is ${task.status}`;
}

/**
 * What a task's badge says. A task's `status` is its latest run's (docs/scheduling.md): right for a
 * one-time task, misleading for a recurring or triggered one, which goes on after a run completes. For
 * those the badge says what the task does now, and the latest run's outcome stands beside it.
 */
export function taskStatusView(task: { type: string; status: string; lastRunAt: string | null }): {
  label: string;
  color: string;
  lastRun: string | null;
} {
  const color = STATUS_COLORS[task.status] ?? 'gray';
  if (task.type === 'one_time' || task.status === 'running' || task.status === 'awaiting_approval')
    return { label: task.status.replace('_', ' '), color, lastRun: null };
  const label = task.type === 'scheduled' ? 'scheduled' : 'waiting for its trigger';
  return { label, color: 'blue', lastRun: task.lastRunAt ? `last run ${task.status}` : 'no run yet' };
}

const STATUS_COLORS: Record<string, string> = {
  completed: 'green',
  failed: 'red',
  cancelled: 'orange',
  running: 'blue',
  awaiting_approval: 'yellow',
  pending: 'gray',
};
