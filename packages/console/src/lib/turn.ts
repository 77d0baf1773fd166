import type { RunEvent, TokenUsage } from '@agentry/client';

/**
 * One answer of an agent as the chat shows it, folded from the run's events. Events carry their
 * sequence number: one already applied (seq at or below lastSeq) is ignored, so a replay after a
 * reload or a reconnection never repeats text, and one from the start rebuilds exactly what was shown.
 */
export interface ToolCallView {
  id: string;
  name: string;
  input: unknown;
  result?: Record<string, unknown>;
  /** Milliseconds between its start and end as this page saw them (absent when replayed). */
  durationMs?: number;
  startedAt?: number;
}

/** A tool call of the turn waiting for a person (an `approval_required` event), until it starts or ends. */
export interface ApprovalView {
  approvalId: string;
  toolCallId: string;
  name: string;
  arguments: unknown;
  reason: string;
}

export interface TurnState {
  runId: string;
  text: string;
  toolCalls: ToolCallView[];
  approvals?: ApprovalView[];
  status: 'streaming' | 'done' | 'error';
  cost?: number;
  tokenUsage?: TokenUsage;
  error?: { code: string; message: string };
  lastSeq: number;
}

export const newTurn = (runId: string): TurnState => ({ runId, text: '', toolCalls: [], status: 'streaming', lastSeq: 0 });

/** The turn after `event`; `live` says whether the event arrives now (durations are measured only then). */
export function applyEvent(turn: TurnState, event: RunEvent, now: number, live = true): TurnState {
  if (Number.isFinite(event.seq) && event.seq <= turn.lastSeq) return turn;
  const next: TurnState = { ...turn, lastSeq: Number.isFinite(event.seq) ? event.seq : turn.lastSeq };
  if (event.type === 'approval_required') {
    const { data } = event;
    next.approvals = [
      ...(turn.approvals ?? []),
      {
        approvalId: data.approvalId,
        toolCallId: data.toolCall.id,
        name: data.toolCall.name,
        arguments: data.toolCall.arguments,
        reason: data.reason,
      },
    ];
    return next;
  }
  if ((event.type === 'tool_call_start' || event.type === 'tool_call_end') && turn.approvals?.length)
    next.approvals = turn.approvals.filter((a) => a.toolCallId !== event.data.id);
  if (event.type === 'done' || event.type === 'error') next.approvals = [];
  switch (event.type) {
    case 'token':
      next.text = turn.text + event.data.text;
      break;
    case 'tool_call_start':
      next.toolCalls = [
        ...turn.toolCalls,
        { id: event.data.id, name: event.data.name, input: event.data.input, startedAt: live ? now : undefined },
      ];
      break;
    case 'tool_call_end':
      next.toolCalls = turn.toolCalls.map((call) =>
        call.id === event.data.id
          ? { ...call, result: event.data.result, durationMs: call.startedAt !== undefined && live ? now - call.startedAt : undefined }
          : call,
      );
      break;
    case 'done':
      next.status = 'done';
      next.cost = event.data.cost;
      next.tokenUsage = event.data.tokenUsage;
      break;
    case 'error':
      next.status = 'error';
      next.error = event.data;
      break;
  }
  return next;
}

/** The run a chat was answering when the page went away: read again after a reload to resume it. */
export interface PendingTurn {
  runId: string;
  conversationId: string;
  agentId: string;
}

const PENDING = 'agentry.pendingTurn';

/** The part of the Web Storage API used here (the page passes sessionStorage; tests a Map-backed one). */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export const pendingTurns = {
  get(storage: KeyValueStore): PendingTurn | null {
    try {
      const value = JSON.parse(storage.getItem(PENDING) ?? 'null');
      return value && typeof value.runId === 'string' && typeof value.conversationId === 'string' ? value : null;
    } catch {
      return null;
    }
  },
  set(storage: KeyValueStore, turn: PendingTurn) {
    storage.setItem(PENDING, JSON.stringify(turn));
  },
  /** Forgets the pending turn if it is this run's (another may have started since). */
  clear(storage: KeyValueStore, runId: string) {
    if (pendingTurns.get(storage)?.runId === runId) storage.removeItem(PENDING);
  },
};

/** The events of a run read from `events` into a turn, each change reported; answers the last state. */
export async function followTurn(
  events: AsyncIterable<RunEvent>,
  turn: TurnState,
  onChange: (turn: TurnState) => void,
  options: { live?: boolean; now?: () => number } = {},
): Promise<TurnState> {
  const now = options.now ?? Date.now;
  let state = turn;
  for await (const event of events) {
    const next = applyEvent(state, event, now(), options.live ?? true);
    if (next !== state) {
      state = next;
      onChange(state);
    }
  }
  return state;
}
