/**
 * A run's statuses and which may follow which, in one place: every writer of a run's status asks
 * here. A run is written `running` when it starts (`queued` is reserved for runs admitted but not
 * yet executing) and moves exactly once to a terminal status; nothing follows a terminal one. A
 * running run whose tool call waits for a person is `awaiting_approval` (no process holds it, no
 * lease) until the process that claims it after the decision makes it `running` again, or it is
 * cancelled (docs/runtime.md, "The state machine of a run").
 */

export const RUN_STATUSES = ['queued', 'running', 'awaiting_approval', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * Statuses of a run still going: one that may still be cancelled, and followed; a queued or running
 * run's lease is kept (one awaiting approval has none).
 */
const ACTIVE_STATUSES = ['queued', 'running', 'awaiting_approval'] as const;
export type ActiveStatus = (typeof ACTIVE_STATUSES)[number];

const TERMINAL_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

const NEXT: Record<RunStatus, readonly RunStatus[]> = {
  queued: ['running', ...TERMINAL_STATUSES],
  running: ['awaiting_approval', ...TERMINAL_STATUSES],
  // Claimed again once decided (running), cancelled while it waits, or failed when it cannot resume.
  awaiting_approval: ['running', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

export function isActive(status: string): status is ActiveStatus {
  return (ACTIVE_STATUSES as readonly string[]).includes(status);
}

/** Whether a run in status `from` may be moved to `to`. */
function mayFollow(from: RunStatus, to: RunStatus): boolean {
  return NEXT[from].includes(to);
}

/** The statuses a run may be in for `to` to be written: the guard of the UPDATE that writes it. */
export function statusesBefore(to: RunStatus): RunStatus[] {
  return RUN_STATUSES.filter((from) => mayFollow(from, to));
}
