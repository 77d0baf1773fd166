import type { RunDetails, RunEvent, components } from '@agentry/client';

/**
 * A run's trace: its model steps, tool calls, approval waits and the events that tell of context
 * fitting, cut answers and errors, in time order, each placed on the run's own time axis. Steps and
 * tool calls carry their times; events carry none, so each is placed at the time of the last timed
 * thing before it in the event log (a tool call's start or end, an approval asked).
 */

export type Approval = components['schemas']['Approval'];
type Step = RunDetails['steps'][number];
type ToolCall = RunDetails['toolCalls'][number];

interface Timed {
  key: string;
  /** Milliseconds since the run started; null when the run did not record it (a run ended before steps had times). */
  offsetMs: number | null;
  durationMs: number | null;
}

export type TraceRow = Timed &
  (
    | { kind: 'model'; step: Step; fallbackFor: string | null }
    | { kind: 'tool'; call: ToolCall; approval: Approval | null }
    | { kind: 'approval'; approval: Approval }
    | { kind: 'event'; title: string; detail: string; tone: 'warning' | 'error' | 'info' }
  );

export interface Trace {
  rows: TraceRow[];
  /** The run's length on the axis: its duration, or up to the latest thing recorded (now while it runs). */
  spanMs: number;
}

const ORDER: Record<TraceRow['kind'], number> = { event: 0, model: 1, approval: 2, tool: 3 };

const at = (iso: string | null | undefined) => (iso ? Date.parse(iso) : null);

export function buildTrace(run: RunDetails, approvals: readonly Approval[], events: readonly RunEvent[], now = Date.now()): Trace {
  const start = at(run.startedAt) ?? Date.parse(run.createdAt);
  const offset = (ms: number | null) => (ms === null ? null : Math.max(0, ms - start));
  const rows: TraceRow[] = [];

  for (const step of run.steps) {
    rows.push({
      kind: 'model',
      key: `step-${step.index}`,
      offsetMs: offset(at(step.startedAt)),
      durationMs: step.durationMs,
      step,
      fallbackFor: step.model !== run.model ? run.model : null,
    });
  }
  const ofCall = new Map(approvals.filter((a) => a.toolCall?.runId === run.id).map((a) => [a.toolCall!.id, a]));
  for (const call of run.toolCalls) {
    rows.push({
      kind: 'tool',
      key: `tool-${call.id}`,
      offsetMs: offset(at(call.startedAt)),
      durationMs: call.durationMs,
      call,
      approval: ofCall.get(call.id) ?? null,
    });
  }
  for (const approval of ofCall.values()) {
    const asked = Date.parse(approval.createdAt);
    const ended = at(approval.decision?.at) ?? (approval.status === 'pending' ? now : null);
    rows.push({
      kind: 'approval',
      key: `approval-${approval.id}`,
      offsetMs: offset(asked),
      durationMs: ended === null ? null : Math.max(0, ended - asked),
      approval,
    });
  }
  rows.push(...eventRows(run, approvals, events, start));

  rows.sort((a, b) => (a.offsetMs ?? Infinity) - (b.offsetMs ?? Infinity) || ORDER[a.kind] - ORDER[b.kind]);
  const ends = rows.map((r) => (r.offsetMs ?? 0) + (r.durationMs ?? 0));
  const runEnd = run.duration ?? (run.completedAt ? Date.parse(run.completedAt) - start : now - start);
  return { rows, spanMs: Math.max(1, runEnd, ...ends) };
}

/** The events that tell what the steps and calls do not: history left out, answers cut and retried, the run's error. */
function eventRows(run: RunDetails, approvals: readonly Approval[], events: readonly RunEvent[], start: number): TraceRow[] {
  const calls = new Map(run.toolCalls.map((c) => [c.id, c]));
  const asked = new Map(approvals.map((a) => [a.id, a]));
  let last = start;
  const rows: TraceRow[] = [];
  const row = (e: RunEvent, title: string, detail: string, tone: 'warning' | 'error' | 'info') =>
    rows.push({ kind: 'event', key: `event-${e.seq}`, offsetMs: last - start, durationMs: null, title, detail, tone });
  for (const e of events) {
    if (e.type === 'tool_call_start') last = at(calls.get(e.data.id)?.startedAt) ?? last;
    else if (e.type === 'tool_call_end') last = at(calls.get(e.data.id)?.completedAt) ?? last;
    else if (e.type === 'approval_required') last = at(asked.get(e.data.approvalId)?.createdAt) ?? last;
    else if (e.type === 'context_truncated')
      row(
        e,
        'Context fitted',
        `${e.data.droppedMessages} older message(s) left out of the prompt without a summary: ${e.data.reason}`,
        'warning',
      );
    else if (e.type === 'answer_cut') {
      const next = { retry: 'the step was asked again', fallback: 'a fallback model was asked', fail: 'the run failed' }[e.data.next];
      row(e, `Answer cut (${e.data.model})`, `${e.data.code}: ${e.data.message}; ${next}`, e.data.next === 'fail' ? 'error' : 'warning');
    } else if (e.type === 'error') row(e, `Error ${e.data.code}`, e.data.message, 'error');
  }
  return rows;
}
