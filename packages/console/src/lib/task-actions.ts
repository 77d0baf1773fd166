/**
 * Why a task's action would be refused in its present state, or null when the server takes it: the
 * transitions of docs/scheduling.md ("Task states"), so the page greys a button out with the reason
 * instead of answering a 409 after the click.
 */
export type TaskAction = 'run' | 'cancel' | 'retry';

export function taskActionRefused(action: TaskAction, task: { status: string; nextRunAt?: string | null }): string | null {
  if (action === 'run') return task.status === 'awaiting_approval' ? 'the task awaits approval: approve it first' : null;
  if (action === 'retry') return task.status === 'failed' ? null : `only a failed task is retried (this one is ${task.status})`;
  // Queued work (a failed run's pending automatic retry) is cancellable too.
  if (task.status === 'pending' || task.status === 'running' || (task.status === 'failed' && task.nextRunAt)) return null;
  return `nothing to cancel: the task is ${task.status}`;
}
