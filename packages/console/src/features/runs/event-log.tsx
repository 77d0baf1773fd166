import type { RunEvent } from '@agentry/client';
import { Text, Timeline } from '@mantine/core';
import { CodeCall, isCodeCall } from '../../code-call';
import { formatTokens, formatUsd } from './format';

interface LogEntry {
  key: string;
  title: string;
  color: string;
  body?: string;
  /** A code tool call's end: shown with its code, output and files instead of the result's JSON. */
  code?: { name: string; input: unknown; result: Record<string, unknown> };
}

/** A run's events as entries: consecutive tokens as one model output, tool calls, the end. */
function entriesOf(events: readonly RunEvent[]): LogEntry[] {
  const out: LogEntry[] = [];
  const started = new Map<string, { name: string; input: unknown }>();
  for (const event of events) {
    const last = out[out.length - 1];
    if (event.type === 'token') {
      if (last?.title === 'Model output') last.body = (last.body ?? '') + event.data.text;
      else out.push({ key: `t${event.seq}`, title: 'Model output', color: 'indigo', body: event.data.text });
    } else if (event.type === 'tool_call_start') {
      started.set(event.data.id, { name: event.data.name, input: event.data.input });
      out.push({ key: `s${event.seq}`, title: `Tool call ${event.data.name}`, color: 'grape', body: JSON.stringify(event.data.input) });
    } else if (event.type === 'tool_call_end') {
      const call = started.get(event.data.id);
      if (call && isCodeCall(call.name))
        out.push({ key: `e${event.seq}`, title: 'Tool result', color: 'grape', code: { ...call, result: event.data.result } });
      else out.push({ key: `e${event.seq}`, title: 'Tool result', color: 'grape', body: JSON.stringify(event.data.result) });
    } else if (event.type === 'approval_required') {
      out.push({
        key: `a${event.seq}`,
        title: `Waiting for approval: ${event.data.toolCall.name}`,
        color: 'yellow',
        body: event.data.reason,
      });
    } else if (event.type === 'done') {
      out.push({
        key: `d${event.seq}`,
        title: 'Done',
        color: 'green',
        body: `${formatUsd(event.data.cost)} · ${formatTokens(event.data.tokenUsage)}`,
      });
    } else if (event.type === 'error') {
      out.push({ key: `x${event.seq}`, title: `Error ${event.data.code}`, color: 'red', body: event.data.message });
    }
  }
  return out;
}

/** The run's event log as it streamed (live while the run goes on): what the model said, the calls, the end. */
export function EventLog({ events }: { events: readonly RunEvent[] }) {
  return (
    <Timeline bulletSize={14} lineWidth={2} data-testid="run-timeline">
      {entriesOf(events).map((entry) => (
        <Timeline.Item key={entry.key} title={entry.title} color={entry.color}>
          {entry.body && (
            <Text size="sm" c="dimmed" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }} lineClamp={8}>
              {entry.body}
            </Text>
          )}
          {entry.code && <CodeCall name={entry.code.name} input={entry.code.input} result={entry.code.result} />}
        </Timeline.Item>
      ))}
    </Timeline>
  );
}
