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
